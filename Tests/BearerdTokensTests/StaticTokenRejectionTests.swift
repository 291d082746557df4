import BearerdAuth
import BearerdTestSupport
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import Synchronization
import Testing

/// An upstream that rejects the static token on every request: one read of the file a second
/// and one warning per window, not one of each per request (issue 34: the journal is not
/// flooded); a replaced file is still taken up.
@Suite("A static token the upstream keeps rejecting")
struct StaticTokenRejectionTests {
    @Test func aRejectionPerRequestWritesOneWarningAWindowAndTheNewFileIsTaken() async throws {
        let directory = try TemporaryDirectory()
        let file = try directory.write("static-token-0001\n", to: "token", mode: 0o600)
        let clock = Mutex(NIODeadline.uptimeNanoseconds(1_000_000_000))
        var handler = InMemoryLogHandler()
        handler.logLevel = .debug
        let logs = handler
        let provider = try StaticTokenProvider(
            path: file,
            logger: Logger(label: "static") { _ in logs },
            now: { clock.withLock { $0 } }
        )
        let token = BearerToken("static-token-0001")
        // 10 s of an upstream that answers 401 to 1,000 requests a second.
        for _ in 0..<10_000 {
            #expect(await provider.upstreamRejected(token) == nil)
            clock.withLock { $0 = $0 + .milliseconds(1) }
        }
        let warnings = logs.entries.filter { $0.level >= .notice }
        #expect(warnings.count <= 3, "\(warnings.map(\.message))")
        #expect(warnings.first?.message == "upstream rejected the static token; replace the token file")
        #expect(warnings.dropFirst().allSatisfy { "\($0.message)".hasSuffix("(repeated)") })
        // The operator replaces the file: taken at the next read, at most a second later.
        try directory.write("static-token-0002\n", to: "token", mode: 0o600)
        var fresh: BearerToken?
        for _ in 0..<1_100 where fresh == nil {
            fresh = await provider.upstreamRejected(token)
            clock.withLock { $0 = $0 + .milliseconds(1) }
        }
        #expect(fresh == BearerToken("static-token-0002"))
        #expect(provider.currentToken() == BearerToken("static-token-0002"))
        let text = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!text.contains("static-token-0001") && !text.contains("static-token-0002"))
    }
}
