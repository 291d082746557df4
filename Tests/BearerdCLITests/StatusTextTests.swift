import BearerdTokens
import Foundation
import Testing

@testable import BearerdCLI

/// What a token server chose reaches a person's terminal only as printable text.
@Suite("status prints only printable characters")
struct StatusTextTests {
    /// A refresh that just happened used to read "(in 0s)".
    @Test func aMomentAgoIsJustNow() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(StatusText.time(now.addingTimeInterval(-0.3), now: now).hasSuffix(" (just now)"))
        #expect(StatusText.time(now.addingTimeInterval(-5), now: now).hasSuffix(" (5s ago)"))
        #expect(StatusText.time(now.addingTimeInterval(65), now: now).hasSuffix(" (in 1m 5s)"))
    }

    @Test(arguments: [
        "\u{1B}]0;pwned\u{07}", "\u{1B}[2J\u{1B}[H", "line\nforged: yes", "\u{9B}31m", "user\u{202E}nimda",
        "a\u{2066}b",
        "tab\tand\rcr", "del\u{7F}",
    ])
    func serverTextIsMadePrintable(hostile: String) {
        var status = TokenStatus(state: .ready, now: Date(timeIntervalSince1970: 1_800_000_000))
        status.subject = hostile
        status.scope = hostile
        status.detail = hostile
        let text = StatusText.render(status)
        #expect(!text.unicodeScalars.contains { PrintableText.isControl($0) && $0 != "\n" }, "\(text.debugDescription)")
        #expect(text.split(separator: "\n").count == 5, "one line per fact: \(text.debugDescription)")
        #expect(PrintableText.of("alice@example.com read write") == "alice@example.com read write")
    }

    /// The state is one of five words on the wire, as before it was an enum; anything else from
    /// a daemon is refused rather than printed.
    @Test func theStateTravelsAsItsWordAndNothingElseIsTaken() throws {
        var status = TokenStatus(state: .loggedOut, now: Date(timeIntervalSince1970: 1_800_000_000))
        let json = String(decoding: try TokenStatus.encoder().encode(status), as: UTF8.self)
        #expect(json.contains(#""state":"logged_out""#))
        #expect(try TokenStatus.decoder().decode(TokenStatus.self, from: Data(json.utf8)) == status)
        #expect(status.state.text == "logged out")
        status.state = .static
        #expect(
            String(decoding: try TokenStatus.encoder().encode(status), as: UTF8.self).contains(#""state":"static""#)
        )
        let forged = json.replacingOccurrences(of: #""logged_out""#, with: #""ready\u001b[2J""#)
        #expect(throws: DecodingError.self) {
            try TokenStatus.decoder().decode(TokenStatus.self, from: Data(forged.utf8))
        }
    }
}
