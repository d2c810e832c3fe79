/// The stored form of rendered payloads: one JSON array, one object per platform, and for a
/// hub-API send one more object saying which registrations it reaches
/// (`{"delivery":"native"}`, `{"delivery":"template","properties":{…}}`).
public enum OutboxPayloadCoding {
    public static func encode(_ payloads: [Platform: RenderedNotification], delivery: NotificationDelivery = .allRegistrations) -> String {
        var output: [UInt8] = Array("[".utf8)
        switch delivery {
        case .allRegistrations: break
        case .nativeRegistrations: output += Array(#"{"delivery":"native"}"#.utf8)
        case .templates(let properties):
            output += Array(#"{"delivery":"template","properties":{"#.utf8)
            for (index, name) in properties.names.enumerated() {
                if index > 0 { output.append(UInt8(ascii: ",")) }
                Escaping.appendJSONString(name, to: &output)
                output.append(UInt8(ascii: ":"))
                Escaping.appendJSONString(properties[name] ?? "", to: &output)
            }
            output += Array("}}".utf8)
        }
        for platform in payloads.keys.sorted() {
            guard let payload = payloads[platform] else { continue }
            if output.count > 1 { output.append(UInt8(ascii: ",")) }
            output += Array(#"{"platform":"#.utf8)
            Escaping.appendJSONString(platform.rawValue, to: &output)
            output += Array(#","contentType":"#.utf8)
            Escaping.appendJSONString(payload.contentType, to: &output)
            output += Array(#","headers":["#.utf8)
            for (headerIndex, header) in payload.headers.enumerated() {
                if headerIndex > 0 { output.append(UInt8(ascii: ",")) }
                output.append(UInt8(ascii: "["))
                Escaping.appendJSONString(header.name, to: &output)
                output.append(UInt8(ascii: ","))
                Escaping.appendJSONString(header.value, to: &output)
                output.append(UInt8(ascii: "]"))
            }
            output += Array(#"],"body":"#.utf8)
            Escaping.appendJSONString(String(decoding: payload.body, as: UTF8.self), to: &output)
            if payload.validateOnly { output += Array(#","validateOnly":true"#.utf8) }
            output.append(UInt8(ascii: "}"))
        }
        output.append(UInt8(ascii: "]"))
        return String(decoding: output, as: UTF8.self)
    }

    public static func decodeWithDelivery(
        _ text: String
    ) throws(StoreError) -> (payloads: [Platform: RenderedNotification], delivery: NotificationDelivery) {
        let corrupt = StoreError(.storage, "a stored notification's payloads are corrupt")
        guard let elements = (try? JSONParser.parse(text))?.arrayElements else { throw corrupt }
        var payloads: [Platform: RenderedNotification] = [:]
        var delivery = NotificationDelivery.allRegistrations
        for element in elements {
            if let kind = element["delivery"]?.stringValue {
                switch kind {
                case "native": delivery = .nativeRegistrations
                case "template":
                    guard case .object(let members)? = element["properties"]?.kind else { throw corrupt }
                    var values: [String: String] = [:]
                    for member in members { values[member.key] = member.value.stringValue ?? "" }
                    delivery = .templates(TemplateProperties(values))
                default: throw corrupt
                }
                continue
            }
            guard let platform = element["platform"]?.stringValue.flatMap(Platform.init(rawValue:)),
                let contentType = element["contentType"]?.stringValue, let body = element["body"]?.stringValue,
                let headerElements = element["headers"]?.arrayElements
            else { throw corrupt }
            var headers: [HTTPHeader] = []
            for header in headerElements {
                guard let pair = header.arrayElements, pair.count == 2, let name = pair[0].stringValue, let value = pair[1].stringValue
                else { throw corrupt }
                headers.append(HTTPHeader(name: name, value: value))
            }
            payloads[platform] = RenderedNotification(
                platform: platform, body: Array(body.utf8), headers: headers, contentType: contentType,
                validateOnly: element["validateOnly"]?.kind == .bool(true))
        }
        return (payloads, delivery)
    }
}
