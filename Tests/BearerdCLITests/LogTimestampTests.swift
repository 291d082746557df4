import Foundation
import Testing

@testable import BearerdCLI

/// The log line's `ts=` is written without Foundation's calendar; it must read as Foundation's
/// ISO 8601 format style wrote it before.
@Suite("log timestamps")
struct LogTimestampTests {
    static func foundation(_ seconds: Int, _ milliseconds: Int) -> String {
        Date(timeIntervalSince1970: Double(seconds) + Double(milliseconds) / 1000 + 0.0001).formatted(
            .iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted)
        )
    }

    @Test(
        "reads as Foundation's ISO 8601 in UTC",
        arguments: [
            (0, 0), (1_800_000_000, 911), (951_782_400, 5),  // 2000-02-29, a leap day
            (1_709_251_199, 999),  // the last millisecond of 2024-02-29
            (4_102_444_799, 1),  // 2099-12-31T23:59:59
            (1_764_095_329, 90),
        ]
    )
    func readsAsFoundationWroteIt(seconds: Int, milliseconds: Int) {
        #expect(
            LogfmtLogHandler.timestamp(milliseconds: seconds * 1000 + milliseconds)
                == Self.foundation(seconds, milliseconds)
        )
    }

    @Test func nowHasTheShapeOfATimestamp() {
        let text = LogfmtLogHandler.timestamp()
        #expect(text.utf8.count == 24, "\(text)")
        #expect(text.hasSuffix("Z") && text.contains("T"))
        let before = Self.foundation(Int(Date.now.timeIntervalSince1970), 0).prefix(16)
        #expect(text.hasPrefix(before) || text > String(before), "\(text) vs \(before)")
    }
}

extension LogTimestampTests {
    /// Every 29th day from 1970 to 2200 (a prime stride, so every day of the month and every
    /// month comes round), and every day of 2000 (a leap century) and 2100 (a century that is
    /// not), at noon, against Foundation's calendar. Not every day: Foundation's formatter is
    /// slow, and this test shares the cooperative threads with timing-bound ones.
    @Test func daysAcross230YearsReadAsFoundationWroteThem() {
        let leapCentury = 10_957..<11_323  // 2000-01-01 ..< 2001-01-01
        let plainCentury = 47_482..<47_847  // 2100-01-01 ..< 2101-01-01
        let days = Array(stride(from: 0, to: 84_000, by: 29)) + Array(leapCentury) + Array(plainCentury)
        var wrong: [String] = []
        for day in days where wrong.count < 3 {
            let seconds = day * 86_400 + 43_200
            let ours = LogfmtLogHandler.timestamp(milliseconds: seconds * 1000)
            let theirs = Self.foundation(seconds, 0)
            if ours != theirs { wrong.append("\(ours) != \(theirs)") }
        }
        #expect(wrong.isEmpty, "\(wrong)")
        #expect(
            LogfmtLogHandler.timestamp(milliseconds: leapCentury.upperBound * 86_400_000 - 1)
                == "2000-12-31T23:59:59.999Z"
        )
        // 2100 has no 29 February: the day after the 28th is 1 March.
        let march2100 = (plainCentury.lowerBound + 31 + 28) * 86_400_000
        #expect(LogfmtLogHandler.timestamp(milliseconds: march2100 - 1) == "2100-02-28T23:59:59.999Z")
        #expect(LogfmtLogHandler.timestamp(milliseconds: march2100) == "2100-03-01T00:00:00.000Z")
    }
}
