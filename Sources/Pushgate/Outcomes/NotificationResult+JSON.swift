/// A send's result written as JSON text without an encoder: every synchronous send answers with
/// it, and `JSONEncoder` (a container per object, the keys sorted at each level) cost about 4%
/// of the everyday send's CPU.
///
/// The text is what the `Encodable` conformances (NotificationResult.swift) write through
/// `JSONEncoder` with sorted keys, byte for byte except in how a string's rarer characters are
/// escaped (this writer also escapes DEL, U+2028 and U+2029, as every JSON the gateway writes
/// itself); `NotificationResultTests` holds the two equal. A key added to a `CodingKeys` goes
/// here too, at its place in sorted order.
extension NotificationResult {
    /// The result as compact JSON, keys in sorted order.
    public func jsonBytes() -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(192 + 256 * targets.count)
        writeJSON(to: &output)
        return output
    }

    func writeJSON(to output: inout [UInt8]) {
        var object = JSONObjectWriter(&output)
        if let error { object.key("error", &output).string(error, &output) }
        object.key("failure", &output).integer(failureCount, &output)
        object.key("notificationId", &output).string(notificationID, &output)
        if omittedTargetCount > 0 { object.key("omittedTargets", &output).integer(omittedTargetCount, &output) }
        object.key("platforms", &output).array(platforms, &output) { $0.writeJSON(to: &$1) }
        object.key("state", &output).string(state.rawValue, &output)
        object.key("success", &output).integer(successCount, &output)
        object.key("targets", &output).array(targets, &output) { $0.writeJSON(to: &$1) }
        object.end(&output)
    }
}

extension PlatformSummary {
    func writeJSON(to output: inout [UInt8]) {
        var object = JSONObjectWriter(&output)
        object.key("outcomes", &output)
        var outcomes = JSONObjectWriter(&output)
        for (outcome, count) in counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            outcomes.key(outcome.rawValue, &output).integer(count, &output)
        }
        outcomes.end(&output)
        object.key("platform", &output).string(platform.rawValue, &output)
        object.key("total", &output).integer(total, &output)
        object.end(&output)
    }
}

extension TargetResult {
    func writeJSON(to output: inout [UInt8]) {
        var object = JSONObjectWriter(&output)
        object.key("attempts", &output).integer(attempts, &output)
        if !diagnostics.isEmpty {
            object.key("diagnostics", &output).array(diagnostics, &output) { header, output in
                var pair = JSONObjectWriter(&output)
                pair.key("name", &output).string(header.name, &output)
                pair.key("value", &output).string(header.value, &output)
                pair.end(&output)
            }
        }
        object.key("handle", &output).string(maskedHandle, &output)
        if let handleAction { object.key("handleAction", &output).string(handleAction.rawValue, &output) }
        object.key("latencyMs", &output).double(latencyMilliseconds, &output)
        object.key("outcome", &output).string(outcome.rawValue, &output)
        object.key("platform", &output).string(platform.rawValue, &output)
        if let reason { object.key("reason", &output).string(reason, &output) }
        object.key("registrationId", &output).string(registrationID.rawValue, &output)
        if let serviceMessageID { object.key("serviceMessageId", &output).string(serviceMessageID, &output) }
        if let statusCode { object.key("statusCode", &output).integer(statusCode, &output) }
        object.end(&output)
    }
}

/// Writes one JSON object's members in the order given (the caller keeps them sorted).
struct JSONObjectWriter {
    private var empty = true

    init(_ output: inout [UInt8]) { output.append(UInt8(ascii: "{")) }

    /// Starts a member: the comma before it, its key and the colon.
    @discardableResult
    mutating func key(_ key: String, _ output: inout [UInt8]) -> JSONValueWriter {
        if !empty { output.append(UInt8(ascii: ",")) }
        empty = false
        Escaping.appendJSONString(key, to: &output)
        output.append(UInt8(ascii: ":"))
        return JSONValueWriter()
    }

    func end(_ output: inout [UInt8]) { output.append(UInt8(ascii: "}")) }
}

/// Writes one JSON value: a scalar, or an array of elements each written by `element`.
struct JSONValueWriter {
    func array<Element>(_ elements: [Element], _ output: inout [UInt8], element: (Element, inout [UInt8]) -> Void) {
        output.append(UInt8(ascii: "["))
        for (index, value) in elements.enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            element(value, &output)
        }
        output.append(UInt8(ascii: "]"))
    }

    func string(_ text: String, _ output: inout [UInt8]) { Escaping.appendJSONString(text, to: &output) }

    func integer(_ value: Int, _ output: inout [UInt8]) { output.append(contentsOf: String(value).utf8) }

    /// As `JSONEncoder` writes a `Double`: its shortest description, without a trailing `.0`.
    /// (A latency is always finite; a non-finite value, which JSON cannot hold, is written as 0.)
    func double(_ value: Double, _ output: inout [UInt8]) {
        guard value.isFinite else {
            output.append(UInt8(ascii: "0"))
            return
        }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        output.append(contentsOf: text.utf8)
    }
}
