/// The identifier of a registration: 1 to 64 characters of letters, digits and `-`.
///
/// New ids are 32 lower-case hex characters drawn from a cryptographically secure generator.
public struct RegistrationID: ValidatedString {
    public let rawValue: String

    public init(_ text: String) throws(RegistrationIDError) {
        guard (1...64).contains(text.utf8.count),
            // Bytes, not Characters: every page of a broadcast reads hundreds of ids.
            text.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D })
        else { throw RegistrationIDError(text: text) }
        rawValue = text
    }

    /// A fresh random id.
    public static func random() -> RegistrationID {
        var generator = SystemRandomNumberGenerator()
        return random(using: &generator)
    }

    public static func random(using generator: inout some RandomNumberGenerator) -> RegistrationID {
        let high = generator.next() as UInt64
        let low = generator.next() as UInt64
        func hex(_ value: UInt64) -> String {
            let digits = String(value, radix: 16)
            return String(repeating: "0", count: 16 - digits.count) + digits
        }
        return try! RegistrationID(hex(high) + hex(low))
    }

}

/// A registration id is malformed (the gateway answers such ids like unknown ones).
public struct RegistrationIDError: PushgateInputError, Hashable {
    public let text: String
    public var description: String {
        "registration id '\(text.prefix(80))' is malformed; expected 1 to 64 letters, digits or '-'"
    }
}
