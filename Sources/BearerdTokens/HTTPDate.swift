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

    /// `Retry-After`: delay-seconds or an HTTP-date, as a delay from `now` (never negative).
    static func retryAfter(_ text: String, now: Date) -> Duration? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed), seconds >= 0 { return .seconds(seconds) }
        guard let date = Self.parse(trimmed) else { return nil }
        return .seconds(max(0, date.timeIntervalSince(now)))
    }
}
