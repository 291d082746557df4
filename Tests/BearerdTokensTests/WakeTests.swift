import BearerdAuth
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

@Suite("Suspend, wake and clock steps")
struct WakeTests {
    @Test func theWatchTellsASuspendFromAStepAndIgnoresNoise() {
        var watch = ClockWatch()
        let start = ClockReading(monotonic: 100, boot: 100, wall: 1_800_000_000)
        #expect(watch.observe(start).isEmpty)
        // A late tick: all three moved 3.5 s.
        #expect(watch.observe(ClockReading(monotonic: 103.5, boot: 103.5, wall: 1_800_000_003.5)).isEmpty)
        // Slewing within the threshold.
        #expect(watch.observe(ClockReading(monotonic: 105.5, boot: 105.5, wall: 1_800_000_006.5)).isEmpty)
        // Two hours asleep: boot and wall moved, monotonic did not.
        #expect(
            watch.observe(ClockReading(monotonic: 107.5, boot: 7307.5, wall: 1_800_007_208.5))
                == [.suspended(seconds: 7200)]
        )
        // NTP steps the wall clock back ten minutes.
        #expect(
            watch.observe(ClockReading(monotonic: 109.5, boot: 7309.5, wall: 1_800_006_610.5))
                == [.wallStepped(seconds: -600)]
        )
    }

    /// A session whose token expires an hour after the start, logged in through the seed.
    static func loggedIn(
        failing: Flag,
        policy: RefreshPolicy = RefreshPolicy()
    ) async throws -> TokenHarness {
        let harness = TokenHarness(policy: policy, random: 1) { _, index in
            if failing.isOn { throw TestClientError("connection refused") }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 3600)
        }
        _ = try await harness.manager.token()
        return harness
    }

    /// The clocks are looked at before an attempt's end is judged: a suspend while the request
    /// was out makes its failure the network coming back, not a failure to count (the timer
    /// awaits its own attempt, so its 2 s look cannot notice it first).
    @Test func aSuspendDuringAnAttemptIsNoticedBeforeItsFailureIsJudged() async throws {
        let failing = Flag()
        let box = Mutex<(ManualTokenClock, ManualClockSource)?>(nil)
        let harness = TokenHarness(random: 1) { _, index in
            if failing.isOn {
                if let (clock, clocks) = box.withLock({ $0 }) {
                    clock.advance(by: .seconds(7200))
                    clocks.suspend(7200)
                }
                throw TestClientError("connection refused")
            }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 3600)
        }
        box.withLock { $0 = (harness.clock, harness.clocks) }
        _ = try await harness.manager.token()
        failing.set(true)
        await harness.manager.refresh(reason: .proactive)
        let status = await harness.manager.status()
        #expect(status.failuresInARow == 0, "a failure just after a wake is not counted")
        #expect(harness.logText.contains("the machine was suspended"))
        #expect(harness.logText.contains(#""retry_in_s": 1.0"#), "retried in a second, not after a backoff")
    }

    @Test func afterATwoHourSleepOneRefreshBringsAFreshTokenAndFailuresWhileTheNetworkComesBackDoNotCount()
        async throws
    {
        let failing = Flag()
        let harness = try await Self.loggedIn(failing: failing)
        #expect(harness.endpoint.requests.count == 1)
        #expect(harness.manager.currentToken()?.value == "access-0")

        // Two hours asleep; the network is not back yet.
        failing.set(true)
        harness.clock.advance(by: .seconds(7200))
        harness.clocks.suspend(7200)
        #expect(harness.manager.currentToken() == nil, "an expired token is never handed out")
        await harness.manager.timerFired()
        #expect(harness.logText.contains("the machine was suspended"))
        var status = await harness.manager.status()
        #expect(status.failuresInARow == 0, "a failure just after a wake is not counted")
        #expect(harness.offset(status.nextRefreshAt).map { $0 - 7200 } == 1, "tried again within a second")

        // A request now waits for the next try instead of a 503; the network comes back.
        let request = Task { try await harness.manager.token() }
        try await harness.clock.waitForSleepers()
        failing.set(false)
        harness.clock.advance(by: .seconds(1))
        await harness.manager.timerFired()
        let token = try await request.value
        #expect(token.value != "access-0" && token.value.hasPrefix("access-"))
        status = await harness.manager.status()
        #expect(status.state == .ready && status.session == "user", "nothing was wiped")
        #expect(status.failuresInARow == 0)
        // The refresh token sent after the wake is the one issued before it: nothing replayed.
        let refreshes = harness.endpoint.requests.dropFirst().map { FakeTokenEndpoint.form($0)["refresh_token"] }
        #expect(refreshes.allSatisfy { $0 == "refresh-0" }, "\(refreshes)")
        #expect(harness.endpoint.requests.count == 3)
    }

    /// However many one-second probes fail while the network comes back, a request waits for
    /// the next (its caller bounds the wait with `proxy.token_wait`), then gets the fresh token.
    @Test func aRequestAfterAWakeWaitsThroughAnyNumberOfFailedProbes() async throws {
        let failing = Flag()
        let harness = try await Self.loggedIn(failing: failing)
        failing.set(true)
        harness.clock.advance(by: .seconds(7200))
        harness.clocks.suspend(7200)
        let request = Task { try await harness.manager.token() }
        for _ in 0..<8 {
            try await harness.clock.waitForSleepers()
            harness.clock.advance(by: .seconds(1))
            harness.clocks.run(1)
        }
        try await harness.clock.waitForSleepers()
        #expect(harness.endpoint.requests.count >= 9, "a probe a second: \(harness.endpoint.requests.count - 1)")
        failing.set(false)
        harness.clock.advance(by: .seconds(1))
        harness.clocks.run(1)
        let token = try await request.value
        #expect(token.value != "access-0" && token.value.hasPrefix("access-"))
    }

    /// A server that answers, with a Retry-After, is not the network coming back: a request
    /// after the wake gets its 503 at once instead of waiting an hour.
    @Test func afterAWakeTheServersRetryAfterStandsAndNoRequestWaitsForIt() async throws {
        let failing = Flag()
        let harness = TokenHarness(random: 1) { _, index in
            if failing.isOn { return TokenHTTPResponse(status: 503, headers: [("retry-after", "3600")]) }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 3600)
        }
        _ = try await harness.manager.token()
        failing.set(true)
        harness.clock.advance(by: .seconds(7200))
        harness.clocks.suspend(7200)
        await harness.manager.timerFired()
        let status = await harness.manager.status()
        #expect(status.failuresInARow == 1, "an answer counts, wake or not")
        do {
            _ = try await harness.manager.token()
            Issue.record("a token while the server asks for an hour")
        } catch let error as TokenUnavailableError {
            #expect("\(error)".contains("retries in"), "\(error)")
        }
        #expect(harness.clock.sleeperCount == 0, "nobody sleeps until the Retry-After")
    }

    @Test func failuresAfterTheWakeWindowCountAgain() async throws {
        let failing = Flag()
        let harness = try await Self.loggedIn(failing: failing)
        failing.set(true)
        harness.clock.advance(by: .seconds(7200))
        harness.clocks.suspend(7200)
        await harness.manager.timerFired()
        harness.clock.advance(by: .seconds(RetrySchedule.wakeGrace + 1))
        harness.clocks.run(RetrySchedule.wakeGrace + 1)
        await harness.manager.timerFired()
        let status = await harness.manager.status()
        #expect(status.failuresInARow == 1, "an outage that outlasts the wake is an outage")
    }

    @Test func aWallClockSteppedBackDoesNotHoldRefreshesBackForAnHour() async throws {
        var policy = RefreshPolicy()
        policy.maxRefreshesPerMinute = 2
        let failing = Flag()
        let harness = try await Self.loggedIn(failing: failing, policy: policy)
        // Two attempts in this minute reach the limit.
        failing.set(true)
        harness.clock.advance(by: .seconds(3590))
        harness.clocks.run(3590)
        await harness.manager.timerFired()
        harness.clock.advance(by: .seconds(5))
        harness.clocks.run(5)
        await harness.manager.timerFired()
        let sent = harness.endpoint.requests.count
        #expect(sent == 3, "the login and two failed refreshes")
        // The wall clock is stepped back an hour, then a minute passes.
        harness.clock.stepWall(by: -3600)
        harness.clocks.stepWall(-3600)
        await harness.manager.noticeClockJumps()
        harness.clock.advance(by: .seconds(61))
        harness.clocks.run(61)
        failing.set(false)
        await harness.manager.timerFired()
        #expect(harness.logText.contains("the wall clock was stepped"))
        #expect(harness.endpoint.requests.count > sent, "attempts made before the step are a minute old now")
        #expect(!harness.logText.contains("token refresh held back"), "\(harness.logText)")
    }
}

/// A switch a fake endpoint reads and a test flips.
final class Flag: Sendable {
    private let state = Mutex(false)

    var isOn: Bool { self.state.withLock { $0 } }

    func set(_ value: Bool) { self.state.withLock { $0 = value } }
}
