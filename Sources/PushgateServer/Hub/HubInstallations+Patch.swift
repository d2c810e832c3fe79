import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Pushgate
import PushgateGateway

extension HubInstallations {
    // MARK: JSON Patch

    /// Applies RFC 6902 operations as Notification Hubs allows them: `add`, `remove` and
    /// `replace` on `/tags`, `/tags/{tag}`, `/userId`, `/pushChannel`, `/templates/{name}` (and
    /// `/templates/{name}/body`, `/tags`, `/headers`).
    static func patch(_ installation: inout Installation, _ bytes: [UInt8]) throws(GatewayError) {
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch { throw .badRequest("body: \(error.description)") }
        guard let operations = root.arrayElements, !operations.isEmpty else {
            throw .badRequest("body: a JSON Patch is a non-empty array of operations")
        }
        var result = installation
        for (index, operation) in operations.enumerated() {
            let at = "body[\(index)]"
            guard let op = operation["op"]?.stringValue, let path = operation["path"]?.stringValue else {
                throw .badRequest("\(at): an operation needs \"op\" and \"path\"")
            }
            let value = operation["value"]
            let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
                $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
            }
            guard path.hasPrefix("/"), let head = segments.first else {
                throw .badRequest("\(at).path: '\(path.prefix(80))' must start with /")
            }
            func needString() throws(GatewayError) -> String {
                guard let text = value?.stringValue else { throw GatewayError.badRequest("\(at).value must be a string") }
                return text
            }
            // RFC 6902: add and replace carry a value; remove carries none.
            if op == "add" || op == "replace", value == nil || value?.kind == .null {
                throw .badRequest("\(at).value is required for '\(op)'")
            }
            switch (op, head, segments.count) {
            case ("add", "tags", 1):
                if let text = value?.stringValue {
                    result.tags.append(text)
                } else {
                    guard value?.arrayElements != nil else { throw .badRequest("\(at).value must be a tag or an array of tags") }
                    result.tags += try stringArray(value, field: "\(at).value")
                }
            case ("replace", "tags", 1):
                guard value?.arrayElements != nil else { throw .badRequest("\(at).value must be an array of tags") }
                result.tags = try stringArray(value, field: "\(at).value")
            case ("remove", "tags", 1):
                result.tags = []
            case ("add", "tags", 2):
                // Tags are added with add /tags; /tags/{tag} names an existing one.
                throw .badRequest("\(at).path: add a tag with {\"op\":\"add\",\"path\":\"/tags\",\"value\":\"tag\"}")
            case ("replace", "tags", 2):
                guard let index = result.tags.firstIndex(of: segments[1]) else {
                    throw .badRequest("\(at).path: the installation has no tag '\(segments[1].prefix(80))' to replace")
                }
                result.tags[index] = try needString()
            case ("remove", "tags", 2):
                guard result.tags.contains(segments[1]) else {
                    throw .badRequest("\(at).path: the installation has no tag '\(segments[1].prefix(80))'")
                }
                result.tags.removeAll { $0 == segments[1] }
            case ("add", "userId", 1), ("replace", "userId", 1):
                result.userID = try needString()
            case ("remove", "userId", 1):
                result.userID = nil
            case ("add", "pushChannel", 1), ("replace", "pushChannel", 1):
                if result.platform == .browser, let value, value.objectMembers != nil {
                    result.pushChannel = try HubInstallations.browserChannel(value, field: "\(at).value")
                } else {
                    result.pushChannel = try needString()
                }
            case ("add", "templates", 2), ("replace", "templates", 2):
                guard var value else { throw .badRequest("\(at).value is required") }
                // The .NET SDK's PartialUpdateOperation carries the template as a JSON string.
                if let text = value.stringValue {
                    do { value = try JSONParser.parse(Array(text.utf8)) } catch {
                        throw .badRequest("\(at).value: a template is a JSON object (or a string holding one): \(error.description)")
                    }
                }
                if op == "replace", result.templates[segments[1]] == nil {
                    throw .badRequest("\(at).path: the installation has no template '\(segments[1].prefix(80))' to replace")
                }
                result.templates[segments[1]] = try template(value, name: segments[1])
            case ("remove", "templates", 2):
                guard result.templates.removeValue(forKey: segments[1]) != nil else {
                    throw .badRequest("\(at).path: the installation has no template '\(segments[1].prefix(80))'")
                }
            case ("add", "templates", 3), ("replace", "templates", 3):
                guard var template = result.templates[segments[1]] else {
                    throw .badRequest("\(at).path: the installation has no template '\(segments[1].prefix(80))'")
                }
                switch segments[2] {
                case "body": template.body = try needString()
                case "tags": template.tags = try stringArray(value, field: "\(at).value")
                case "expiry": template.expiry = try needString()
                default: throw .badRequest("\(at).path: '\(path.prefix(80))' cannot be patched")
                }
                result.templates[segments[1]] = template
            case ("add", _, _), ("remove", _, _), ("replace", _, _):
                throw .badRequest(
                    "\(at).path: '\(path.prefix(80))' cannot be \(op == "add" ? "added" : op == "remove" ? "removed" : "replaced")")
            default:
                throw .badRequest("\(at).op: '\(op.prefix(20))' is not supported; use add, remove or replace")
            }
        }
        _ = try Self.installation(from: JSONParser.parseOrNull(encode(result)), id: result.id)
        installation = result
    }
}
