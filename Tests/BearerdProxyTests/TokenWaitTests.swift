import BearerdAuth
import BearerdTestSupport
import Foundation
import NIOHTTP1
import Synchronization
import Testing

/// A provider whose refresh takes a while, as against a token server whose host does not
/// answer. It says when its refresh has ended, answered or cancelled.
private final class SlowTokenProvider: TokenProvider {
    let delay: Duration
    private let ended = Mutex(false)
    var done: Bool { self.ended.withLock { $0 } }

    init(delay: Duration) { self.delay = delay }
    func currentToken() -> BearerToken? { nil }
    func token() async throws -> BearerToken {
        defer { self.ended.withLock { $0 = true } }
        try await Task.sleep(for: self.delay)
        return BearerToken("slow-token-0042")
    }
    func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? { nil }
    func secondsUntilNextAttempt() -> Int? { 7 }
}

/// The wall-clock bound over real traffic is measured by `OutageTests` against the real binary;
/// these check the behaviour, whatever the load on the machine running them.
@Suite("proxy.token_wait")
struct TokenWaitTests {
    @Test func aRequestThatWaitsLongerThanTokenWaitGets503WithTheNextAttempt() async throws {
        let provider = SlowTokenProvider(delay: .milliseconds(1500))
        try await ProxyFixture.with(yaml: "proxy:\n  token_wait: 200ms", tokens: provider) { proxy in
            let answer = try await proxy.send(.GET, "/waits")
            #expect(answer.status == 503)
            #expect(answer.head.headers["retry-after"] == ["7"], "the provider's next attempt")
            #expect(answer.bodyText.contains("proxy.token_wait (200ms)"), "\(answer.bodyText)")
            #expect(proxy.upstream.requests.isEmpty)
        }
        // The refresh went on after the request gave up. Its answer completes a promise on an
        // event loop, so the proxy's shutdown waited for it (cancelled) before the loops stopped:
        // under NIO's strict mode an answer after them crashes the whole test process.
        #expect(provider.done, "the proxy shut down with a token provider call still running")
    }

    @Test func aTokenThatComesWithinTokenWaitIsUsed() async throws {
        let provider = SlowTokenProvider(delay: .milliseconds(100))
        try await ProxyFixture.with(yaml: "proxy:\n  token_wait: 60s", tokens: provider) { proxy in
            let answer = try await proxy.send(.GET, "/in-time")
            #expect(answer.status == 200)
            #expect(proxy.upstream.requests.first?.head.headers["authorization"] == ["Bearer slow-token-0042"])
        }
    }
}
