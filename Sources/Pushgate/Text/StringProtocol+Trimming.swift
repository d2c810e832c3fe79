extension StringProtocol {
    /// The text without leading and trailing characters from `set` (a tiny, Foundation-free trim:
    /// Foundation's `trimmingCharacters(in:)` goes through `NSString`, on every request's headers).
    /// Compared by Unicode scalar, so that `\r\n` (one `Character`) goes too.
    package func trimmed(of set: String = " \t\n\r") -> String {
        let trimmed = set.unicodeScalars
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !trimmed.contains($0) }) else { return "" }
        let last = scalars.lastIndex(where: { !trimmed.contains($0) })!
        return String(self[first...last])
    }

    /// Whether `needle` (lowercase ASCII) occurs in the text, ASCII letters compared without case:
    /// `Accept: application/XML` asks for XML. Foundation-free, like ``trimmed(of:)``.
    package func containsIgnoringASCIICase(_ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty else { return true }
        let text = Array(utf8)
        guard text.count >= pattern.count else { return false }
        for start in 0...(text.count - pattern.count) {
            var index = 0
            while index < pattern.count {
                let byte = text[start + index]
                let lowered = byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
                guard lowered == pattern[index] else { break }
                index += 1
            }
            if index == pattern.count { return true }
        }
        return false
    }
}
