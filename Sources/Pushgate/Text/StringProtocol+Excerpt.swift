extension StringProtocol {
    /// The text cut to at most `maximumBytes` bytes of UTF-8, at a Unicode scalar boundary, with
    /// `marker` appended when anything was cut: how an error quotes client input. Counted in
    /// bytes, not `Character`s: one `Character` may be a letter followed by any number of
    /// combining marks (`a` and 13,000 accents are one `Character` of 26 KB).
    ///
    /// ```swift
    /// ("a" + String(repeating: "\u{301}", count: 13_000)).excerpt(maximumBytes: 60)  // "a" and 29 accents, then "…"
    /// ```
    package func excerpt(maximumBytes: Int, marker: String = "…") -> String {
        guard utf8.count > maximumBytes else { return String(self) }
        var kept = String.UnicodeScalarView()
        var bytes = 0
        for scalar in unicodeScalars {
            bytes += UTF8.width(scalar)
            if bytes > maximumBytes { break }
            kept.append(scalar)
        }
        return String(kept) + marker
    }
}
