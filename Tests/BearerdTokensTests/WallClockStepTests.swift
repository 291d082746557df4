import BearerdAuth
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdTokens

/// A step of this machine's wall clock (NTP correcting a clock that ran fast or slow) moves no
/// deadline: the token server's clock did not move, so neither did the token's expiry.
@Suite("Wall-clock steps")
struct WallClockStepTests {
    /// How the server says when its tokens expire.
    enum Expiry: String, CaseIterable, Sendable {
        /// `expires_in` alone.
        case lifetime
        /// A JWT `exp` on the server's clock, with its `Date` header, and no `expires_in`.
        case jwtExp
    }

    static let steps: [TimeInterval] = [-3600, -600, 600, 3600]

    /// A session of 60 s tokens. The server's clock is the harness clock's `now` (true time);
    /// this machine's wall clock is `wallNow`, which the test steps.
    static func session(_ expiry: Expiry) async throws -> TokenHarness {
        let clock = ManualTokenClock()
        let harness = TokenHarness(clock: clock, random: 0.5) { _, index in
            let serverNow = clock.now
            switch expiry {
            case .lifetime:
                return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 60)
            case .jwtExp:
                let exp = Int(serverNow.timeIntervalSince1970) + 60
                return FakeTokenEndpoint.tokens(
                    access: jwt(#"{"sub":"alice","n":\#(index),"exp":\#(exp)}"#),
                    refresh: "refresh-\(index)",
                    expiresIn: nil,
                    headers: [("date", HTTPDateText.format(serverNow))]
                )
            }
        }
        _ = try await harness.manager.token()
        return harness
    }

    static func advance(_ harness: TokenHarness, _ seconds: Double) {
        harness.clock.advance(by: .milliseconds(Int64(seconds * 1000)))
        harness.clocks.run(seconds)
    }

    @Test(arguments: Expiry.allCases, steps)
    func noExpiredTokenLeavesAndTheRefreshStaysOnSchedule(expiry: Expiry, step: TimeInterval) async throws {
        let harness = try await Self.session(expiry)
        let first = try #require(harness.manager.currentToken())
        Self.advance(harness, 10)
        harness.clock.stepWall(by: step)
        harness.clocks.stepWall(step)
        await harness.manager.noticeClockJumps()
        #expect(harness.logText.contains("the wall clock was stepped"))

        // The token is still good (the server's clock moved 10 s), and `status` says the next
        // refresh is under a minute away, on the wall clock as it now reads.
        #expect(harness.manager.currentToken() == first)
        let status = await harness.manager.status()
        let refreshIn = try #require(status.nextRefreshAt).timeIntervalSince(status.now)
        #expect(refreshIn > 0 && refreshIn < 50, "next refresh in \(refreshIn) s after a step of \(step) s")
        let expiresIn = try #require(status.expiresAt).timeIntervalSince(status.now)
        #expect(abs(expiresIn - 50) < 1, "expires in \(expiresIn) s")
        #expect(abs(status.now.timeIntervalSince(harness.clock.wallNow)) < 0.001, "status shows the wall clock")

        // No proactive refresh yet; then one on schedule, with the token still usable.
        await harness.manager.timerFired()
        #expect(harness.endpoint.requests.count == 1)
        Self.advance(harness, refreshIn)
        await harness.manager.timerFired()
        #expect(harness.endpoint.requests.count == 2, "the proactive refresh came on time")
        let second = try #require(harness.manager.currentToken())
        #expect(second != first)

        // A 401 for a token older than the floor still forces one refresh.
        Self.advance(harness, RefreshPolicy.forcedRefreshFloor + 1)
        let retried = await harness.manager.upstreamRejected(second)
        #expect(retried != nil && retried != second)
        #expect(harness.endpoint.requests.count == 3)
    }

    /// With the token server down, the token serves until it really expires, and not a second
    /// longer, whichever way the wall clock went.
    @Test(arguments: Expiry.allCases, steps)
    func duringAnOutageTheTokenEndsWhenTheServerSaysItEnds(expiry: Expiry, step: TimeInterval) async throws {
        let harness = try await Self.session(expiry)
        harness.endpoint.answer { _, _ in throw TestClientError("connection refused") }
        Self.advance(harness, 10)
        harness.clock.stepWall(by: step)
        harness.clocks.stepWall(step)
        for _ in 0..<49 {
            Self.advance(harness, 1)
            await harness.manager.timerFired()
        }
        #expect(harness.endpoint.requests.count > 1, "refreshes were tried during the outage")
        #expect(harness.manager.currentToken() != nil, "59 s old: still valid at the server")
        Self.advance(harness, 1.5)
        #expect(harness.manager.currentToken() == nil, "60.5 s old: expired at the server")
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
    }

    /// The step comes while the refresh is in flight: the answer's times are taken on the
    /// engine's clock, so nothing planned from it is off by the step.
    @Test(arguments: steps)
    func aStepDuringARefreshDoesNotMoveTheNewToken(step: TimeInterval) async throws {
        let harness = try await Self.session(.jwtExp)
        let gate = Gate()
        let clock = harness.clock
        harness.endpoint.answer { _, index in
            await gate.wait()
            let exp = Int(clock.now.timeIntervalSince1970) + 60
            return FakeTokenEndpoint.tokens(
                access: jwt(#"{"sub":"alice","n":\#(index),"exp":\#(exp)}"#),
                refresh: "refresh-\(index)",
                expiresIn: nil,
                headers: [("date", HTTPDateText.format(clock.now))]
            )
        }
        Self.advance(harness, 31)
        let refresh = Task { await harness.manager.timerFired() }
        while harness.endpoint.requests.count < 2 { await Task.yield() }
        harness.clock.stepWall(by: step)
        harness.clocks.stepWall(step)
        await gate.open()
        await refresh.value
        await harness.manager.noticeClockJumps()
        let status = await harness.manager.status()
        let expiresIn = try #require(status.expiresAt).timeIntervalSince(status.now)
        #expect(abs(expiresIn - 60) < 1, "the new token expires in \(expiresIn) s")
    }
}

extension WallClockStepTests {
    /// bearerd started before NTP set the clock (it was 10 minutes behind) and read a token from
    /// its store; NTP then steps the clock forward. The token ends when the server said, not 10
    /// minutes later.
    @Test func aStoredTokenReadOnAClockThatWasBehindEndsOnTimeAfterNTPCorrectsIt() async throws {
        let clock = ManualTokenClock()
        let start = clock.now
        let behind: TimeInterval = 600
        // Truly now is start + 600; the token expires a minute from truly now.
        let stored = StoredTokens(
            user: StoredSession(
                refreshToken: Secret("refresh-0"),
                accessToken: BearerToken("access-0"),
                accessExpiresAt: start.addingTimeInterval(behind + 60),
                receivedAt: start.addingTimeInterval(behind - 60)
            )
        )
        let harness = TokenHarness(clock: clock, stored: stored, seed: nil) { _, index in
            FakeTokenEndpoint.tokens(access: "access-\(index + 1)", refresh: "refresh-\(index + 1)", expiresIn: 60)
        }
        #expect(harness.manager.currentToken()?.value == "access-0")
        clock.stepWall(by: behind)
        harness.clocks.stepWall(behind)
        await harness.manager.noticeClockJumps()
        let status = await harness.manager.status()
        let left = try #require(status.expiresAt).timeIntervalSince(status.now)
        #expect(abs(left - 60) < 1, "the stored token has \(left) s left after NTP's step")
        Self.advance(harness, 61)
        #expect(harness.manager.currentToken()?.value != "access-0", "a token the server calls expired was handed out")
    }

    /// A server that sends a JWT `exp` and no `Date` header: after a step of this machine's
    /// clock, whichever clock is right, the token is taken to end at the earlier reading.
    @Test(arguments: steps)
    func withoutADateHeaderTheEarlierReadingOfExpIsTaken(step: TimeInterval) async throws {
        let clock = ManualTokenClock()
        let harness = TokenHarness(clock: clock, seed: "refresh-seed") { _, index in
            let exp = Int(clock.now.timeIntervalSince1970) + 60
            return FakeTokenEndpoint.tokens(
                access: jwt(#"{"sub":"alice","n":\#(index),"exp":\#(exp)}"#),
                refresh: "refresh-\(index)",
                expiresIn: nil
            )
        }
        clock.stepWall(by: step)
        harness.clocks.stepWall(step)
        let token = try await harness.manager.token()
        Self.advance(harness, 60.5)
        #expect(harness.manager.currentToken() != token, "handed out past the server's exp after a step of \(step) s")
    }
}

/// IMF-fixdate (RFC 9110 §5.6.7), as a token server's `Date` header writes it.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
