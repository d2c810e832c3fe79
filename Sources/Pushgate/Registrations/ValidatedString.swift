/// A string that was checked on construction (a tag, an app name, a registration id). It is encoded
/// as a plain JSON string, and decoding runs the same check, so an invalid value can never be
/// decoded into existence.
public protocol ValidatedString: Codable, Hashable, Comparable, CustomStringConvertible, Sendable {
    associatedtype ValidationError: Error & CustomStringConvertible
    var rawValue: String { get }
    init(_ text: String) throws(ValidationError)
}

extension ValidatedString {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        do {
            try self.init(text)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
