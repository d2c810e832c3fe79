extension StringProtocol {
    /// The text without leading and trailing characters from `set` (a tiny, Foundation-free trim).
    func trimmed(of set: String = " \t\n\r") -> String {
        let isTrimmed: (Character) -> Bool = { set.contains($0) }
        guard let first = firstIndex(where: { !isTrimmed($0) }) else { return "" }
        let last = lastIndex(where: { !isTrimmed($0) })!
        return String(self[first...last])
    }
}
