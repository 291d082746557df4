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
    /// Every day from 1970 to 2200 against Foundation's calendar, at noon.
    @Test func everyDayFor230YearsReadsAsFoundationWroteIt() {
        var wrong: [String] = []
        for day in stride(from: 0, to: 84_000, by: 1) where wrong.count < 3 {
            let seconds = day * 86_400 + 43_200
            let ours = LogfmtLogHandler.timestamp(milliseconds: seconds * 1000)
            let theirs = Self.foundation(seconds, 0)
            if ours != theirs { wrong.append("\(ours) != \(theirs)") }
        }
        #expect(wrong.isEmpty, "\(wrong)")
    }
}
