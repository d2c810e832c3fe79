/// `ServiceBusNotification-ScheduleTime` as every SDK writes it, made RFC 3339: UTC
/// `yyyy-MM-ddTHH:mm:ss`, with fractions, `Z` or an offset — .NET `2026-11-24T09:00:00.0000000Z`,
/// JavaScript `2026-11-24T09:00:00.000Z`, Python `isoformat()` with or without `+00:00`, and
/// notificationhubs-rest-python's `2026-11-24'T'09:00:00` (its format string's quotes kept).
package enum ScheduleTime {
    /// The text as RFC 3339: quotes dropped, and a time without a zone taken as UTC.
    package static func rfc3339(_ text: String) -> String {
        var normalized = String(text.drop(while: { $0 == " " }).reversed().drop(while: { $0 == " " }).reversed())
            .replacing("'", with: "")
        let time = normalized.dropFirst(10)
        if !normalized.hasSuffix("Z") && !time.contains("+") && !time.contains("-") && normalized.count >= 19 { normalized += "Z" }
        return normalized
    }
}
