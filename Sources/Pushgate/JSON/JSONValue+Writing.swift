extension JSONValue {
    /// The value as compact JSON text (numbers exactly as they were written).
    public func serialized() -> [UInt8] {
        var output: [UInt8] = []
        write(to: &output)
        return output
    }

    func write(to output: inout [UInt8]) {
        switch kind {
        case .null: output.append(contentsOf: "null".utf8)
        case .bool(let flag): output.append(contentsOf: (flag ? "true" : "false").utf8)
        case .number(let text): output.append(contentsOf: text.utf8)
        case .string(let text): Escaping.appendJSONString(text, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            for (index, member) in members.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                member.value.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    /// The value with `value` set at `path` (object keys), creating objects on the way and
    /// replacing what was there. A non-object on the way is replaced by an object.
    public func setting(_ path: [String], to value: JSONValue) -> JSONValue {
        guard let key = path.first else { return value }
        var members: [JSONMember]
        if case .object(let existing) = kind { members = existing } else { members = [] }
        if let index = members.firstIndex(where: { $0.key == key }) {
            members[index].value = members[index].value.setting(Array(path.dropFirst()), to: value)
        } else {
            members.append(JSONMember(key: key, value: JSONValue(.object([])).setting(Array(path.dropFirst()), to: value)))
        }
        return JSONValue(.object(members), offset: offset)
    }
}
