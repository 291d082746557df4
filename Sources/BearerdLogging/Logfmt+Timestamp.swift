import Foundation

extension Logfmt {
    /// The time now as `2026-11-25T18:28:49.911Z` (UTC, milliseconds).
    ///
    /// Written by hand rather than with Foundation's ISO 8601 format style, which builds an ICU
    /// calendar and time zone: that pulled ICU's code into a daemon that otherwise never needs
    /// it, and cost more per log line. `Date` itself is only a clock read.
    package static func timestamp() -> String {
        // A clock beyond what an Int counts in milliseconds reads as 1970, never a trap in a log call.
        let milliseconds = Int(exactly: (Date.now.timeIntervalSince1970 * 1000).rounded(.down)) ?? 0
        return Self.timestamp(milliseconds: milliseconds)
    }

    /// `milliseconds` since 1970-01-01T00:00:00Z, in the form above (a clock set before 1970
    /// reads as 1970).
    package static func timestamp(milliseconds: Int) -> String {
        let milliseconds = max(0, milliseconds)
        let seconds = milliseconds / 1000
        let secondOfDay = seconds % 86_400
        let (year, month, day) = Self.civilDate(daysSince1970: seconds / 86_400)
        var text = ""
        text.reserveCapacity(24)
        Self.append(year, digits: 4, to: &text)
        text += "-"
        Self.append(month, digits: 2, to: &text)
        text += "-"
        Self.append(day, digits: 2, to: &text)
        text += "T"
        Self.append(secondOfDay / 3600, digits: 2, to: &text)
        text += ":"
        Self.append(secondOfDay / 60 % 60, digits: 2, to: &text)
        text += ":"
        Self.append(secondOfDay % 60, digits: 2, to: &text)
        text += "."
        Self.append(milliseconds % 1000, digits: 3, to: &text)
        text += "Z"
        return text
    }

    /// The proleptic Gregorian date of a day counted from 1970-01-01 (Howard Hinnant's
    /// `civil_from_days`, exact for every day an `Int` can count).
    package static func civilDate(daysSince1970: Int) -> (year: Int, month: Int, day: Int) {
        let z = daysSince1970 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `value` in decimal, padded with zeros to `digits`.
    private static func append(_ value: Int, digits: Int, to text: inout String) {
        let decimal = String(value)
        if decimal.utf8.count < digits { text += String(repeating: "0", count: digits - decimal.utf8.count) }
        text += decimal
    }
}
