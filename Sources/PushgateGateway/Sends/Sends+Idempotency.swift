import Foundation
import Pushgate

extension Sends {
    // MARK: Idempotent sends (`Idempotency-Key`)

    /// The key of an `Idempotency-Key` header, naming what is wrong with it.
    package static func idempotencyKeyValue(_ header: String) throws(GatewayError) -> String {
        var text = header.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("\"") {
            // An sf-string: "…" with \" and \\ escaped.
            var key = ""
            var escaped = false
            var closed = false
            for character in text.dropFirst() {
                if closed { throw .badRequest("Idempotency-Key: nothing may follow the closing quote") }
                if escaped {
                    guard character == "\"" || character == "\\" else {
                        throw .badRequest("Idempotency-Key: only \\\" and \\\\ are escapes in a quoted key")
                    }
                    key.append(character)
                    escaped = false
                } else if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    closed = true
                } else {
                    key.append(character)
                }
            }
            guard closed else { throw .badRequest("Idempotency-Key: the quoted key has no closing quote") }
            text = key
        }
        guard !text.isEmpty else { throw .badRequest("Idempotency-Key is empty") }
        guard text.count <= IdempotencyKey.maximumLength else {
            throw .badRequest("Idempotency-Key is \(text.count) characters; at most \(IdempotencyKey.maximumLength) are allowed")
        }
        guard text.unicodeScalars.allSatisfy({ (0x20...0x7E).contains($0.value) }) else {
            throw .badRequest("Idempotency-Key: only visible ASCII characters and spaces are allowed")
        }
        return text
    }

    /// The notification a repeat of a send answers (the one that holds its key), or nil for a
    /// first send. The same key with another request is refused (422), naming the key.
    public func repeatedSend(_ key: IdempotencyKey?, sender: String) async throws(GatewayError) -> NotificationRecord? {
        guard let key else { return nil }
        let holder = try await storeCall { () throws(StoreError) in
            try await store.idempotentNotification(key: key, app: appID, sender: sender)
        }
        guard let holder else { return nil }
        return try await record(holding: key, holder)
    }

    /// The record of the notification that holds `key`, when it was stored for the same request.
    package func record(holding key: IdempotencyKey, _ holder: OutboxKeyHolder) async throws(GatewayError) -> NotificationRecord {
        guard key.matches(holder.fingerprint) else {
            throw GatewayError(
                .unprocessable,
                "Idempotency-Key '\(key.key.prefix(64))' was used for another request (notification \(holder.notificationID)); "
                    + "a key names one request for \(outbox.configuration.idempotencyWindowSeconds) s")
        }
        let id = holder.notificationID
        guard let record = try await storeCall({ () throws(StoreError) in try await store.notificationRecord(id: id, app: appID) }) else {
            throw GatewayError(.conflict, "Idempotency-Key '\(key.key.prefix(64))': its notification \(id) was just deleted; retry")
        }
        return record
    }

    /// A synchronous send's answer to a repeat: the first send's notification as it is now, with
    /// its counts (its targets are at `GET /api/notifications/{id}/outcome`).
    public func replayed(_ record: NotificationRecord) -> SendOutcome {
        var result = NotificationResult(notificationID: record.id, selection: record.selection, counts: record.counts, targets: [])
        result.state = record.state
        let ending: SendOutcome.Ending = record.state.isFinal ? .finished : .continuing
        if ending == .continuing {
            result.error = "a repeat of a send still in progress (Idempotency-Key): notification \(record.id) records its outcome"
        }
        return SendOutcome(result: result, ending: ending, secureID: record.secureID, replayed: true)
    }
}
