import BearerdAuth
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

/// While callers wait for a token that has expired, the engine tries the token server again every
/// few seconds, however long its backoff has grown: service comes back within a probe interval of
/// the token server, not a minute later (issue 34: 40 s at 503 after a 35 s outage).
@Suite("Probing the token server while callers wait")
struct OutageProbeTests {
    /// Callers every 100 ms for `seconds` on the harness's clock, with the scheduler's timer
    /// looked at as often; the clock times of the token requests made meanwhile.
    func call(_ harness: TokenHarness, for seconds: Int) async -> [Double] {
        var times: [Double] = []
        var seen = harness.endpoint.requests.count
        for _ in 0..<(seconds * 10) {
            _ = try? await harness.manager.token()
            await harness.manager.timerFired()
            let count = harness.endpoint.requests.count
            if count > seen, let at = harness.offset(harness.clock.now) {
                times += Array(repeating: at, count: count - seen)
            }
            seen = count
            harness.clock.advance(by: .milliseconds(100))
        }
        return times
    }

    @Test func callersWaitingForATokenGetOneAttemptEveryProbeIntervalAndServiceBackWithinOne() async throws {
        let down = Mutex(true)
        // random 1: every backoff is its ceiling, 64 s after seven failures.
        let harness = TokenHarness(random: 1) { _, index in
            if down.withLock({ $0 }) { return TokenHTTPResponse(status: 503) }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 600)
        }
        let times = await self.call(harness, for: 60)
        let gaps = zip(times.dropFirst(), times).map { $0 - $1 }
        #expect(times.count >= 19 && times.count <= 21, "\(times)")
        #expect(gaps.allSatisfy { $0 >= 3 - 1e-6 }, "two attempts within a probe interval: \(times)")
        #expect(gaps.allSatisfy { $0 <= 3.1 + 1e-6 }, "callers waited longer than a probe interval: \(times)")
        // What a refused caller is told to wait is the probe, not the backoff.
        #expect((harness.manager.secondsUntilNextAttempt() ?? 99) <= 3)

        down.withLock { $0 = false }
        let back = harness.clock.now
        var token: BearerToken?
        while token == nil, harness.clock.now.timeIntervalSince(back) < 10 {
            token = try? await harness.manager.token()
            if token == nil { harness.clock.advance(by: .milliseconds(100)) }
        }
        #expect(token != nil)
        #expect(harness.clock.now.timeIntervalSince(back) <= 3 + 1e-6)
    }

    @Test func probesStayWithinTheRefreshesPerMinute() async throws {
        var policy = RefreshPolicy()
        policy.maxRefreshesPerMinute = 5
        let harness = TokenHarness(policy: policy, random: 1) { _, _ in TokenHTTPResponse(status: 503) }
        let times = await self.call(harness, for: 120)
        for start in times {
            #expect(times.filter { $0 >= start && $0 < start + 60 }.count <= 5, "\(times)")
        }
        #expect(times.count >= 9, "\(times)")
        #expect(!harness.logText.contains("token refresh held back"))
    }

    @Test func aTokenThatStillServesKeepsTheLongBackoff() async throws {
        let now = ManualTokenClock().now
        let session = StoredSession(
            refreshToken: Secret("refresh-0"),
            accessToken: BearerToken("access-0"),
            accessExpiresAt: now.addingTimeInterval(300),
            receivedAt: now.addingTimeInterval(-3300)
        )
        let harness = TokenHarness(stored: StoredTokens(user: session), random: 1) { _, _ in
            TokenHTTPResponse(status: 503)
        }
        await harness.manager.timerFired()
        #expect(harness.endpoint.requests.count == 1)
        // Callers are served the token in hand; the retries follow the backoff (1, 2, 4, 8 s),
        // not the probe interval.
        let times = await self.call(harness, for: 30)
        #expect(times.count <= 5, "\(times)")
    }
}
