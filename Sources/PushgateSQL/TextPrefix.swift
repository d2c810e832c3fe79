/// Text that begins with a prefix, as a range both SQL stores can walk on a byte-ordered index.
package enum TextPrefix {
    /// The least text above every text that begins with `prefix` (its last character advanced);
    /// nil for an empty prefix.
    package static func upperBound(_ prefix: String) -> String? {
        guard let last = prefix.unicodeScalars.last, let next = Unicode.Scalar(last.value + 1) else { return nil }
        return String(prefix.unicodeScalars.dropLast()) + String(next)
    }
}
