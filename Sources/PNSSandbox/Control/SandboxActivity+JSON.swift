import Pushgate

extension SandboxActivity {
    /// The activity as the control API shows it: what the device displays at `now`, the content
    /// state exactly as the last applied payload had it.
    ///
    /// `{"id", "deviceId", "name", "attributesType", "attributes", "updateToken", "contentState",
    /// "timestamp", "state", "channel", "alert", "staleDate", "dismissalDate", "updates", "ignored"}`,
    /// absent values as `null`.
    func json(at now: Double) -> JSONValue {
        func string(_ text: String?) -> JSONValue { text.map { JSONValue(.string($0)) } ?? JSONValue(.null) }
        func number(_ value: Double?) -> JSONValue {
            guard let value else { return JSONValue(.null) }
            let integral = value.rounded() == value && abs(value) < 9e15
            return JSONValue(.number(integral ? String(Int64(value)) : String(value)))
        }
        let members: [(String, JSONValue)] = [
            ("id", string(id)), ("deviceId", string(deviceID)), ("name", string(name)), ("attributesType", string(attributesType)),
            ("attributes", attributes ?? JSONValue(.null)), ("updateToken", string(updateToken)),
            ("contentState", contentState ?? JSONValue(.null)), ("timestamp", number(timestamp)),
            ("state", string(state(at: now).rawValue)), ("channel", string(channel)), ("alert", alert ?? JSONValue(.null)),
            ("staleDate", number(staleDate)), ("dismissalDate", number(dismissalDate)), ("updates", number(Double(updates))),
            ("ignored", number(Double(ignored))),
        ]
        return JSONValue(.object(members.map { JSONMember(key: $0.0, value: $0.1) }))
    }
}
