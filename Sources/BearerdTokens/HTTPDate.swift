import Foundation

/// IMF-fixdate (RFC 9110 §5.6.7), as in `Date` and `Retry-After` headers.
enum HTTPDate {
    /// Parsed by hand (``Timestamp``), never by ICU: the text comes from the token server.
    static func parse(_ text: String) -> Date? {
        Timestamp.imfFixdate(text)
    }

    static func format(_ date: Date) -> String {
        Self.formatter().string(from: date)
    }

    /// A new one per use: `DateFormatter` is not safe to share across threads.
    private static func formatter() -> DateFormatter {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter
    }

    /// The longest `Retry-After` bearerd honours: a token server asking for more (a year, or
    /// 2^63 seconds) is retried after an hour instead of never.
    static let longestRetryAfter: TimeInterval = 3600

    /// `Retry-After`: delay-seconds or an HTTP-date, as a delay from `now`, within 0 and
    /// ``longestRetryAfter``.
    static func retryAfter(_ text: String, now: Date) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if !trimmed.isEmpty, trimmed.utf8.count <= 40, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            // Digits beyond Int's range are still "very long".
            let seconds = Int(trimmed).map(TimeInterval.init) ?? Self.longestRetryAfter
            return .seconds(min(seconds, Self.longestRetryAfter))
        }
        guard let date = Self.parse(trimmed) else { return nil }
        return .seconds(min(max(0, date.timeIntervalSince(now)), Self.longestRetryAfter))
    }
}
