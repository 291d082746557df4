import Foundation
import Testing

@testable import BearerdTokens

@Suite("Timestamps read by hand, not by ICU")
struct TimestampTests {
    @Test(
        arguments: [
            ("2026-11-22T12:00:00Z", 1_795_348_800.0),
            ("2026-11-22t12:00:00.5+01:00", 1_795_345_200.5),
            ("2026-11-22 12:00:00.25-00:30", 1_795_350_600.25),
            ("1970-01-01T00:00:00Z", 0),
            ("2000-02-29T23:59:60Z", 951_868_799),
            ("9999-12-31T23:59:59Z", 253_402_300_799),
            ("0001-01-01T00:00:00Z", -62_135_596_800),
            // The input that took ICU down (a fraction of hundreds of digits).
            ("2026-11-22T12:00:00.\(String(repeating: "9", count: 300))Z", 1_795_348_800.999_999_999),
        ]
    )
    func rfc3339(text: String, seconds: Double) throws {
        let date = try #require(Timestamp.rfc3339(text))
        #expect(abs(date.timeIntervalSince1970 - seconds) < 1e-6)
    }

    @Test(
        arguments: [
            "2026-02-29T00:00:00Z", "2026-11-22T12:00:00", "2026-11-22T12:00:00.Z", "2026-11-22T24:00:00Z",
            "2026-13-01T00:00:00Z", "2026-11-22T12:00:00+1:00", "26-11-22T12:00:00Z", "2026-11-22T12:00:00Zjunk",
            "0000-01-01T00:00:00Z", "", "１２３４-11-22T12:00:00Z",
        ]
    )
    func notRFC3339(text: String) {
        #expect(Timestamp.rfc3339(text) == nil)
    }

    @Test func imfFixdate() throws {
        #expect(Timestamp.imfFixdate("Sun, 06 Nov 1994 08:49:37 GMT")?.timeIntervalSince1970 == 784_111_777)
        #expect(Timestamp.imfFixdate("  Sun, 06 Nov 1994 08:49:37 GMT ")?.timeIntervalSince1970 == 784_111_777)
        for text in [
            "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
            "Sun, 31 Feb 1994 08:49:37 GMT", "Sun, 06 Nox 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37  GMT",
        ] {
            #expect(Timestamp.imfFixdate(text) == nil, "\(text)")
        }
    }

    /// The civil-date arithmetic against Foundation's formatter (which is fine for writing), over
    /// dates spread across the years HTTP dates can name.
    @Test func everyFormattedDateReadsBack() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            let seconds = Double(Int.random(in: -2_208_988_800...253_402_300_799, using: &generator))
            let date = Date(timeIntervalSince1970: seconds)
            #expect(Timestamp.imfFixdate(HTTPDate.format(date)) == date, "\(HTTPDate.format(date))")
        }
    }
}
