/// A registration tag, validated with Notification Hubs rules: 1 to 120 characters, each a letter,
/// a digit or one of `_ @ # . : -`; or the implicit forms `$InstallationId:{id}` and `$UserId:{id}`.
///
/// Tags are matched by exact presence. The gateway adds `username:<user>` to every registration.
public struct Tag: ValidatedString {
    /// Longest tag, in characters.
    public static let maximumLength = 120
    /// At most 4 UTF-8 bytes per allowed character.
    public static let maximumBytes = 4 * maximumLength
    /// Most tags on one registration.
    public static let maximumPerRegistration = 60

    public let rawValue: String

    public init(_ text: String) throws(TagError) {
        if let problem = Self.problem(in: text) { throw TagError(tag: text, problem: problem) }
        self.rawValue = text
    }

    /// The tag that marks a user's registrations: `username:<name>`.
    public static func username(_ name: String) throws(TagError) -> Tag {
        try Tag("username:" + name)
    }

    /// Whether `character` may appear in a plain tag.
    public static func isTagCharacter(_ character: Character) -> Bool {
        switch character {
        case "_", "@", "#", ".", ":", "-": return true
        default: return character.isLetter || character.isNumber
        }
    }

    /// Whether `byte` is an ASCII letter, digit or one of `_ @ # . : -`: a plain tag's bytes when
    /// it is ASCII (most are), checked before its characters.
    private static func isASCIITagByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
        case UInt8(ascii: "_"), UInt8(ascii: "@"), UInt8(ascii: "#"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "-"): true
        default: false
        }
    }

    private static func problem(in text: String) -> TagError.Problem? {
        if text.isEmpty { return .empty }
        // An ASCII plain tag: one byte per character, each allowed.
        if text.utf8.count <= maximumLength, text.utf8.allSatisfy(isASCIITagByte) { return nil }
        // Bytes first: a letter followed by thousands of combining marks is one character.
        if text.utf8.count > maximumBytes { return .tooManyBytes(text.utf8.count) }
        let count = text.count
        if count > maximumLength { return .tooLong(count) }
        for prefix in ["$InstallationId:{", "$UserId:{"] where text.hasPrefix(prefix) {
            guard text.hasSuffix("}"), count > prefix.count + 1 else { return .malformedImplicit }
            let inner = text.dropFirst(prefix.count).dropLast()
            if let (offset, bad) = inner.enumerated().first(where: { !(isTagCharacter($0.element) || $0.element == "=") }) {
                return .invalidCharacter(bad, position: prefix.count + offset + 1)
            }
            return nil
        }
        if let (offset, bad) = text.enumerated().first(where: { !isTagCharacter($0.element) }) {
            return .invalidCharacter(bad, position: offset + 1)
        }
        return nil
    }
}

/// A tag, or a registration's list of tags, breaks the Notification Hubs rules.
public struct TagError: PushgateInputError, Hashable {
    enum Problem: Hashable {
        case empty
        case tooLong(Int)
        case tooManyBytes(Int)
        case invalidCharacter(Character, position: Int)
        case malformedImplicit
        case tooMany(Int)
    }

    public let tag: String
    let problem: Problem

    init(tag: String, problem: Problem) {
        self.tag = tag
        self.problem = problem
    }

    /// A registration carries more than ``Tag/maximumPerRegistration`` tags.
    public static func tooMany(_ count: Int) -> TagError { TagError(tag: "", problem: .tooMany(count)) }

    /// The tag as a message shows it: at most 40 characters (a refused tag may be huge).
    private var excerpt: String {
        let scalars = tag.unicodeScalars
        guard scalars.count > 40 else { return tag }
        var shown = String.UnicodeScalarView()
        shown.append(contentsOf: scalars.prefix(40))
        return String(shown) + "…"
    }

    public var description: String {
        switch problem {
        case .empty:
            return "tag is empty"
        case .tooLong(let count):
            return "tag '\(excerpt)' is \(count) characters long; the limit is \(Tag.maximumLength)"
        case .tooManyBytes(let bytes):
            return "tag '\(excerpt)' is \(bytes) bytes long in UTF-8; the limit is \(Tag.maximumBytes)"
        case .invalidCharacter(let character, let position):
            return "tag '\(excerpt)' has an invalid character \(quoted(character)) at position \(position); "
                + "tags may contain letters, digits and _ @ # . : -"
        case .malformedImplicit:
            return "tag '\(excerpt)' must have the form $InstallationId:{id} or $UserId:{id}"
        case .tooMany(let count):
            return "a registration has \(count) tags; the limit is \(Tag.maximumPerRegistration)"
        }
    }
}

/// A character as it should appear in an error message: printable ones quoted, others as U+XXXX.
func quoted(_ character: Character) -> String {
    let scalars = character.unicodeScalars
    if scalars.count == 1, let scalar = scalars.first, scalar.value < 0x20 || scalar.value == 0x7F || scalar.properties.isWhitespace {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }
    return "'\(character)'"
}
