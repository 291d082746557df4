import Foundation

/// Parses the two timestamp formats token servers send, by hand: RFC 3339 (custom JSON APIs'
/// `expiresAt`) and IMF-fixdate (RFC 9110 §5.6.7, `Date` and `Retry-After`).
///
/// Not with Foundation's formatters: they hand the text to ICU, which the fuzzer showed to die of
/// a floating-point exception on a fraction of a few hundred digits. A token server's answer must
/// never be able to stop the daemon.
enum Timestamp {
    /// `2026-11-22T12:00:00Z`, `2026-11-22t12:00:00.123+01:00`: RFC 3339 §5.6 `date-time`.
    static func rfc3339(_ text: String) -> Date? {
        var scanner = Scanner(Array(text.utf8))
        guard let year = scanner.digits(4), scanner.skip("-"), let month = scanner.digits(2), scanner.skip("-"),
            let day = scanner.digits(2), scanner.skip("T") || scanner.skip("t") || scanner.skip(" "),
            let hour = scanner.digits(2), scanner.skip(":"), let minute = scanner.digits(2), scanner.skip(":"),
            let second = scanner.digits(2)
        else { return nil }
        var fraction = 0.0
        if scanner.skip(".") {
            // Any number of digits; those past the ninth cannot matter.
            var scale = 0.1
            var count = 0
            while let digit = scanner.digit() {
                if count < 9 { fraction += Double(digit) * scale }
                scale /= 10
                count += 1
            }
            guard count > 0 else { return nil }
        }
        var offset = 0
        if scanner.skip("Z") || scanner.skip("z") {
        } else if let sign = scanner.sign(), let hours = scanner.digits(2), scanner.skip(":"),
            let minutes = scanner.digits(2), hours <= 23, minutes <= 59
        {
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard scanner.atEnd,
            let seconds = Self.epochSeconds(
                year: year,
                month: month,
                day: day,
                hour: hour,
                minute: minute,
                second: second
            )
        else { return nil }
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }

    static let weekdays = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT`. The obsolete RFC 850 and asctime forms are not read:
    /// bearerd only uses these dates for clock skew and `Retry-After`, and does without.
    static func imfFixdate(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.utf8.count == 29 else { return nil }
        let fields = trimmed.split(separator: " ", omittingEmptySubsequences: false)
        guard fields.count == 6, fields[0].count == 4, fields[0].hasSuffix(","),
            Self.weekdays.contains(String(fields[0].dropLast())), fields[5] == "GMT",
            let monthIndex = Self.months.firstIndex(of: String(fields[2]))
        else { return nil }
        var day = Scanner(Array(fields[1].utf8))
        var year = Scanner(Array(fields[3].utf8))
        var time = Scanner(Array(fields[4].utf8))
        guard let dayNumber = day.digits(2), day.atEnd, let yearNumber = year.digits(4), year.atEnd,
            let hour = time.digits(2), time.skip(":"), let minute = time.digits(2), time.skip(":"),
            let second = time.digits(2), time.atEnd,
            let seconds = Self.epochSeconds(
                year: yearNumber,
                month: monthIndex + 1,
                day: dayNumber,
                hour: hour,
                minute: minute,
                second: second
            )
        else { return nil }
        return Date(timeIntervalSince1970: Double(seconds))
    }

    /// Seconds since 1970 for a UTC civil time, or `nil` when a field is out of range. Days from
    /// the civil date by H. Hinnant's `days_from_civil`; a leap second (60) counts as 59.
    static func epochSeconds(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int) -> Int? {
        guard (1...9999).contains(year), (1...12).contains(month), hour <= 23, minute <= 59, second <= 60 else {
            return nil
        }
        let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
        let lengths = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        guard (1...lengths[month - 1]).contains(day) else { return nil }
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468
        return days * 86_400 + hour * 3600 + minute * 60 + min(second, 59)
    }

    /// Reads ASCII bytes left to right.
    private struct Scanner {
        let bytes: [UInt8]
        var index = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { self.index == self.bytes.count }

        mutating func skip(_ character: Unicode.Scalar) -> Bool {
            guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: character) else { return false }
            self.index += 1
            return true
        }

        mutating func digit() -> Int? {
            guard self.index < self.bytes.count,
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self.bytes[self.index])
            else { return nil }
            defer { self.index += 1 }
            return Int(self.bytes[self.index] - UInt8(ascii: "0"))
        }

        /// Exactly `count` digits.
        mutating func digits(_ count: Int) -> Int? {
            var value = 0
            for _ in 0..<count {
                guard let digit = self.digit() else { return nil }
                value = value * 10 + digit
            }
            return value
        }

        mutating func sign() -> Int? {
            if self.skip("+") { return 1 }
            if self.skip("-") { return -1 }
            return nil
        }
    }
}
