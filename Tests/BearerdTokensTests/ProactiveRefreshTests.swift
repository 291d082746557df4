import BearerdAuth
import BearerdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BearerdTokens

@Suite("Proactive refresh on a manual clock", .timeLimit(.minutes(1)))
struct ProactiveRefreshTests {
    @Test(arguments: [0.0, 0.5, 0.999_999])
    func theRefreshTimeIsTheMarginBeforeExpiryWithinTheJitter(random: Double) {
        let policy = RefreshPolicy()
        let received = Date(timeIntervalSince1970: 0)
        // An hour: 10 % (360 s) is more than the 60 s minimum; ±10 % jitter → 324…396 s early.
        let hour = policy.refreshTime(received: received, lifetime: 3600, random: random)
        #expect((3600 - 396)...(3600 - 324) ~= hour)
        // Ten minutes: the 60 s minimum wins → 54…66 s early.
        let tenMinutes = policy.refreshTime(received: received, lifetime: 600, random: random)
        #expect((600 - 66)...(600 - 54) ~= tenMinutes)
        // Five seconds: never more than half the lifetime → 2.25…2.75 s early.
        let short = policy.refreshTime(received: received, lifetime: 5, random: random)
        #expect((5 - 2.75)...(5 - 2.25) ~= short)
        // And the token stays usable until after its refresh time.
        for lifetime in [5.0, 120, 600, 3600] {
            let usable = policy.usableUntil(receivedAt: received, expiresAt: received.addingTimeInterval(lifetime))
            #expect(
                policy.refreshTime(received: received, lifetime: lifetime, random: random)
                    < usable.timeIntervalSince1970
            )
        }
    }

    @Test func inSteadyStateNoRequestWaitsForARefresh() async throws {
        let harness = TokenHarness(random: 0.5) { _, index in
            FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 600)
        }
        let scheduler = Task { await harness.manager.runScheduler() }
        defer { scheduler.cancel() }
        // The seeded refresh token is exchanged at once, then the timer sleeps until 60 s before expiry.
        try await harness.clock.waitForSleepers()
        #expect(harness.endpoint.requests.count == 1)
        for round in 1...5 {
            guard let refreshAt = await harness.manager.currentSession?.refreshAt else {
                Issue.record("no session")
                return
            }
            // Just before the refresh: the data path's synchronous read has a token.
            harness.clock.advance(to: refreshAt.addingTimeInterval(-1))
            #expect(harness.manager.currentToken() == BearerToken("access-\(round - 1)"))
            harness.clock.advance(to: refreshAt)
            // The refresh happened without anyone asking; the next token is there before expiry.
            while harness.endpoint.requests.count < round + 1 { await Task.yield() }
            try await harness.clock.waitForSleepers()
            #expect(harness.manager.currentToken() == BearerToken("access-\(round)"))
        }
        #expect(harness.endpoint.requests.count == 6)
    }

    @Test func theTimerRetriesAfterAFailureAndRecoversByItself() async throws {
        let down = Mutex(true)
        let harness = TokenHarness(random: 1) { _, index in
            if down.withLock({ $0 }) { return TokenHTTPResponse(status: 502) }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", expiresIn: 600)
        }
        let scheduler = Task { await harness.manager.runScheduler() }
        defer { scheduler.cancel() }
        try await harness.clock.waitForSleepers()
        #expect(harness.endpoint.requests.count == 1)
        // Backoff with random 1: 1 s, then 2 s.
        harness.clock.advance(by: .seconds(1))
        while harness.endpoint.requests.count < 2 { await Task.yield() }
        try await harness.clock.waitForSleepers()
        down.withLock { $0 = false }
        harness.clock.advance(by: .seconds(2))
        while harness.manager.currentToken() == nil { await Task.yield() }
        #expect(harness.manager.currentToken() == BearerToken("access-2"))
    }
}

extension RefreshPolicy {
    /// Seconds after `received` at which a token of `lifetime` seconds is refreshed.
    func refreshTime(received: Date, lifetime: Double, random: Double) -> Double {
        self.refreshTime(receivedAt: received, expiresAt: received.addingTimeInterval(lifetime), random: random)
            .timeIntervalSince(received)
    }
}

/// A store whose writes fail until told otherwise (a full or read-only disk).
final class FlakyStore: TokenStore {
    let inner = MemoryTokenStore()
    let failing = Mutex(true)
    let attempts = Mutex(0)

    func load() throws -> StoredTokens? { try self.inner.load() }

    func save(_ tokens: StoredTokens) throws {
        self.attempts.withLock { $0 += 1 }
        if self.failing.withLock({ $0 }) { throw TokenEngineError.body("No space left on device") }
        try self.inner.save(tokens)
    }
}

@Suite("Tokens that cannot be written", .timeLimit(.minutes(1)))
struct UnsavedTokensTests {
    @Test func aFailedWriteKeepsServingFromMemoryAndIsRetried() async throws {
        let store = FlakyStore()
        let clock = ManualTokenClock()
        let endpoint = FakeTokenEndpoint { _, index in
            FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 600)
        }
        let manager = TokenManager(
            source: TokenHarness.source,
            transport: endpoint,
            store: store,
            seed: Secret("seed"),
            clock: clock,
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        let scheduler = Task { await manager.runScheduler() }
        defer { scheduler.cancel() }
        try await clock.waitForSleepers()
        #expect(manager.currentToken() == BearerToken("access-0"), "serving from memory")
        #expect(try store.load() == nil)
        clock.advance(by: .seconds(5))
        try await clock.waitForSleepers()
        // The refresh-in-flight mark before sending, the answer, then the retry after 5 s.
        #expect(store.attempts.withLock { $0 } == 3, "retried after 5 s")
        store.failing.withLock { $0 = false }
        clock.advance(by: .seconds(5))
        try await clock.waitForSleepers()
        #expect(try store.load()?.user?.refreshToken == Secret("refresh-0"))
        #expect(endpoint.requests.count == 1, "no refresh was needed to get the tokens on disk")
    }

    @Test func aValidStoredAccessTokenIsUsedAtOnceWithoutARefresh() async throws {
        let clock = ManualTokenClock()
        let endpoint = FakeTokenEndpoint { _, _ in TokenHTTPResponse(status: 500) }
        let manager = TokenManager(
            source: TokenHarness.source,
            transport: endpoint,
            store: MemoryTokenStore(
                StoredTokens(
                    refreshToken: Secret("r"),
                    accessToken: BearerToken("stored-access"),
                    accessExpiresAt: clock.now.addingTimeInterval(600)
                )
            ),
            clock: clock,
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        #expect(manager.currentToken() == BearerToken("stored-access"))
        #expect(try await manager.token() == BearerToken("stored-access"))
        #expect(endpoint.requests.isEmpty)
    }
}
