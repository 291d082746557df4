import BearerdAuth
import BearerdTestSupport
import Foundation
import NIOHTTP1
import Testing

/// A provider whose refresh takes longer than `proxy.token_wait`, as against a token server
/// whose host does not answer: the request gets 503 with the provider's next attempt, and the
/// refresh goes on for the requests after it.
private final class SlowTokenProvider: TokenProvider {
    let delay: Duration
    init(delay: Duration) { self.delay = delay }
    func currentToken() -> BearerToken? { nil }
    func token() async throws -> BearerToken {
        try await Task.sleep(for: self.delay)
        return BearerToken("slow-token-0042")
    }
    func upstreamRejected(_ token: BearerToken) async -> BearerToken? { nil }
    func secondsUntilNextAttempt() -> Int? { 7 }
}

@Suite("proxy.token_wait")
struct TokenWaitTests {
    @Test func aRequestWaitsForATokenAtMostTokenWait() async throws {
        let yaml = "proxy:\n  token_wait: 200ms"
        try await ProxyFixture.with(yaml: yaml, tokens: SlowTokenProvider(delay: .milliseconds(1500))) { proxy in
            let started = ContinuousClock.now
            let answer = try await proxy.send(.GET, "/waits")
            let took = ContinuousClock.now - started
            #expect(answer.status == 503)
            #expect(answer.head.headers["retry-after"] == ["7"])
            #expect(answer.bodyText.contains("proxy.token_wait"), "\(answer.bodyText)")
            #expect(took < .milliseconds(1200), "answered after \(took)")
            #expect(proxy.upstream.requests.isEmpty)
        }
    }

    @Test func aTokenThatComesWithinTokenWaitIsUsed() async throws {
        try await ProxyFixture.with(
            yaml: "proxy:\n  token_wait: 2s",
            tokens: SlowTokenProvider(delay: .milliseconds(100))
        ) {
            proxy in
            let answer = try await proxy.send(.GET, "/in-time")
            #expect(answer.status == 200)
            #expect(proxy.upstream.requests.first?.head.headers["authorization"] == ["Bearer slow-token-0042"])
        }
    }
}
