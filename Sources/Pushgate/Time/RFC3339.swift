/// RFC 3339 date-times (`2026-11-23T14:05:00Z`, `2026-11-23T15:05:00.250+01:00`): parsing with the
/// position of what is wrong, and formatting in UTC with milliseconds.
public enum RFC3339 {
    /// The instant `text` names. Throws naming the first character that does not fit.
    public static func parse(_ text: String) throws(RFC3339Error) -> Timestamp {
        let bytes = Array(text.utf8)
        var index = 0
        func number(_ digits: Int, _ what: String) throws(RFC3339Error) -> Int {
            var value = 0
            for _ in 0..<digits {
                guard index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 else {
                    throw RFC3339Error(text: text, position: index, reason: "expected a digit of the \(what)")
                }
                value = value * 10 + Int(bytes[index] - 48)
                index += 1
            }
            return value
        }
        func expect(_ characters: String, _ what: String) throws(RFC3339Error) {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else {
                throw RFC3339Error(text: text, position: index, reason: "expected \(what)")
            }
            index += 1
        }
        let year = try number(4, "year")
        try expect("-", "'-' after the year")
        let month = try number(2, "month")
        try expect("-", "'-' after the month")
        let day = try number(2, "day")
        try expect("Tt ", "'T' between the date and the time")
        let hour = try number(2, "hour")
        try expect(":", "':' after the hour")
        let minute = try number(2, "minute")
        try expect(":", "':' after the minutes")
        let second = try number(2, "seconds")
        var fraction = 0.0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                fraction += Double(bytes[index] - 48) * scale
                scale /= 10
                index += 1
            }
            if index == start { throw RFC3339Error(text: text, position: index, reason: "expected digits after '.'") }
        }
        var offset = 0
        guard index < bytes.count else {
            throw RFC3339Error(text: text, position: index, reason: "expected a time zone: 'Z' or an offset such as +01:00")
        }
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            let offsetHours = try number(2, "offset hours")
            try expect(":", "':' in the offset")
            let offsetMinutes = try number(2, "offset minutes")
            guard offsetHours < 24, offsetMinutes < 60 else {
                throw RFC3339Error(text: text, position: index - 5, reason: "the offset is out of range")
            }
            offset = sign * (offsetHours * 3600 + offsetMinutes * 60)
        default:
            throw RFC3339Error(text: text, position: index, reason: "expected a time zone: 'Z' or an offset such as +01:00")
        }
        guard index == bytes.count else { throw RFC3339Error(text: text, position: index, reason: "unexpected text after the date-time") }
        guard (1...12).contains(month) else { throw RFC3339Error(text: text, position: 5, reason: "month \(month) is out of range") }
        guard (1...daysIn(month: month, year: year)).contains(day) else {
            throw RFC3339Error(text: text, position: 8, reason: "day \(day) is out of range for the month")
        }
        guard hour < 24 else { throw RFC3339Error(text: text, position: 11, reason: "hour \(hour) is out of range") }
        guard minute < 60 else { throw RFC3339Error(text: text, position: 14, reason: "minute \(minute) is out of range") }
        guard second < 61 else { throw RFC3339Error(text: text, position: 17, reason: "second \(second) is out of range") }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = Double(days * 86400 + hour * 3600 + minute * 60 + min(second, 59) - offset) + fraction
        return Timestamp(secondsSinceEpoch: seconds)
    }

    /// `time` in UTC with milliseconds: `2026-11-23T14:05:00.000Z`.
    public static func format(_ time: Timestamp) -> String {
        let milliseconds = Int((time.secondsSinceEpoch * 1000).rounded(.down))
        let (dayNumber, dayMilliseconds) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        let days = dayMilliseconds < 0 ? dayNumber - 1 : dayNumber
        let rest = dayMilliseconds < 0 ? dayMilliseconds + 86_400_000 : dayMilliseconds
        let (year, month, day) = civil(fromDays: days)
        func padded(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(padded(year, 4))-\(padded(month, 2))-\(padded(day, 2))T\(padded(rest / 3_600_000, 2)):"
            + "\(padded(rest / 60_000 % 60, 2)):\(padded(rest / 1000 % 60, 2)).\(padded(rest % 1000, 3))Z"
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days from 1970-01-01 (Howard Hinnant's `days_from_civil`).
    static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day number (`civil_from_days`).
    static func civil(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

/// A date-time that is not RFC 3339, with the position (0-based, in UTF-8 bytes) of the problem.
public struct RFC3339Error: PushgateInputError, Hashable {
    public let text: String
    public let position: Int
    public let reason: String

    public var description: String {
        "'\(text.prefix(64))' is not an RFC 3339 date-time (such as 2026-11-23T14:05:00Z): \(reason) at position \(position)"
    }
}
