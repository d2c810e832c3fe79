import Crypto

/// The `Pushgate-Signature` header (the scheme Stripe's webhooks made familiar):
/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, one `v1=` per secret
/// (two while a secret is rotated). A receiver recomputes the HMAC over the raw body with its
/// secret, compares it in constant time with any `v1=`, and refuses a `t` older than its tolerance.
public enum WebhookSignature {
    /// The header's name.
    public static let headerName = "Pushgate-Signature"

    /// The header's value for `body` posted at `timestamp`, signed with each of `secrets` in order.
    public static func header(timestamp: Int64, body: [UInt8], secrets: [[UInt8]]) -> String {
        (["t=\(timestamp)"] + secrets.map { "v1=" + signature(secret: $0, timestamp: timestamp, body: body) }).joined(separator: ",")
    }

    /// `hex(HMAC-SHA256(secret, "<timestamp>.<body>"))`.
    public static func signature(secret: [UInt8], timestamp: Int64, body: [UInt8]) -> String {
        var message = Array("\(timestamp).".utf8)
        message.append(contentsOf: body)
        let code = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return hex(Array(code))
    }

    /// Whether `header` signs `body` with `secret`, made no more than `tolerance` seconds from `now`.
    public static func verify(header: String, body: [UInt8], secret: [UInt8], now: Int64, tolerance: Int64) -> Verification {
        var timestamp: Int64?
        var signatures: [String] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1)
            guard pair.count == 2 else { return .malformed }
            switch pair[0].trimmingSpaces {
            case "t": timestamp = Int64(pair[1].trimmingSpaces)
            case "v1": signatures.append(String(pair[1].trimmingSpaces))
            default: continue  // other schemes are ignored, as Stripe's receivers do
            }
        }
        guard let timestamp, !signatures.isEmpty else { return .malformed }
        guard abs(now - timestamp) <= tolerance else { return .outsideTolerance }
        let expected = Array(signature(secret: secret, timestamp: timestamp, body: body).utf8)
        // Compared in constant time with every v1 (no early exit on the first byte that differs).
        let matched = signatures.reduce(false) { found, candidate in constantTimeEqual(Array(candidate.utf8), expected) || found }
        return matched ? .valid : .mismatch
    }

    public enum Verification: Sendable, Hashable {
        case valid
        case malformed
        case outsideTolerance
        case mismatch
    }

    static func constantTimeEqual(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        guard lhs.count == rhs.count else { return false }
        var difference: UInt8 = 0
        for index in lhs.indices { difference |= lhs[index] ^ rhs[index] }
        return difference == 0
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return text
    }
}
