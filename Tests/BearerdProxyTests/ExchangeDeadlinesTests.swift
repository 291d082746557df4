import NIOCore
import Testing

@testable import BearerdProxy

/// An exchange's deadlines on their own: times and byte counts in, what is due out.
@Suite("Exchange deadlines")
struct ExchangeDeadlinesTests {
    static let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    /// `value` milliseconds after the exchange began.
    static func ms(_ value: Int64) -> NIODeadline { Self.t0 + .milliseconds(value) }

    /// body 1 s, response head 5 s, send 3 s, read 2 s (so the response is checked every 2 s).
    static func deadlines() -> ExchangeDeadlines {
        ExchangeDeadlines(
            timeouts: .init(body: .seconds(1), response: .seconds(5), send: .seconds(3), read: .seconds(2))
        )
    }

    static func snapshot(
        body: Int = 0,
        ended: Bool = false,
        readsHeld: Bool = false,
        response: Int = 0,
        clientWritable: Bool = true
    ) -> ExchangeDeadlines.Snapshot {
        .init(
            requestBodyBytes: body,
            requestEnded: ended,
            readsHeld: readsHeld,
            responseBodyBytes: response,
            clientWritable: clientWritable
        )
    }

    @Test func nothingRunsUntilSomethingIsAwaited() {
        var deadlines = Self.deadlines()
        let check = deadlines.check(now: Self.ms(60_000), Self.snapshot())
        #expect(check == .none)
    }

    @Test func aBodyThatKeepsComingIsCheckedAgainAndOneThatPausesExpires() {
        var deadlines = Self.deadlines()
        let first = deadlines.bodyArriving(now: Self.t0)
        #expect(first == Self.ms(1000))
        let again = deadlines.bodyArriving(now: Self.ms(10))
        #expect(again == nil, "the first check is set once")
        let early = deadlines.check(now: Self.ms(999), Self.snapshot(body: 0))
        #expect(early == .arm(Self.ms(1000)))
        let moving = deadlines.check(now: Self.ms(1000), Self.snapshot(body: 100))
        #expect(moving == .arm(Self.ms(2000)))
        let paused = deadlines.check(now: Self.ms(2000), Self.snapshot(body: 100))
        #expect(paused == .expired(.requestBodyStalled))
    }

    @Test func aBodyHeldBackByBearerdIsNotTheClientsFault() {
        var deadlines = Self.deadlines()
        _ = deadlines.bodyArriving(now: Self.t0)
        // Held now: the upstream cannot take more.
        let heldNow = deadlines.check(now: Self.ms(1000), Self.snapshot(body: 0, readsHeld: true))
        #expect(heldNow == .arm(Self.ms(2000)))
        // Held since the last check, released since: still not the client's fault.
        let heldBefore = deadlines.check(now: Self.ms(2000), Self.snapshot(body: 0))
        #expect(heldBefore == .arm(Self.ms(3000)))
        deadlines.readsWereHeld()
        let heldBetween = deadlines.check(now: Self.ms(3000), Self.snapshot(body: 0))
        #expect(heldBetween == .arm(Self.ms(4000)))
        let paused = deadlines.check(now: Self.ms(4000), Self.snapshot(body: 0))
        #expect(paused == .expired(.requestBodyStalled))
    }

    @Test func aCompleteRequestIsNotCheckedForItsBody() {
        var deadlines = Self.deadlines()
        _ = deadlines.bodyArriving(now: Self.t0)
        let check = deadlines.check(now: Self.ms(5000), Self.snapshot(body: 10, ended: true))
        #expect(check == .none)
    }

    @Test func theResponseHeadIsDueResponseTimeoutAfterTheRequestWasSent() {
        var deadlines = Self.deadlines()
        let due = deadlines.requestSent(at: Self.ms(100))
        #expect(due == Self.ms(5100))
        let second = deadlines.requestSent(at: Self.ms(200))
        #expect(second == nil, "one deadline per sending")
        let early = deadlines.check(now: Self.ms(5099), Self.snapshot(ended: true))
        #expect(early == .arm(Self.ms(5100)))
        let late = deadlines.check(now: Self.ms(5100), Self.snapshot(ended: true))
        #expect(late == .expired(.responseHeadLate))
    }

    @Test func aReplayWaitsForItsResponseHeadAfresh() {
        var deadlines = Self.deadlines()
        _ = deadlines.requestSent(at: Self.t0)
        deadlines.stopWaitingForResponseHead()
        let replay = deadlines.requestSent(at: Self.ms(4000))
        #expect(replay == Self.ms(9000))
        let check = deadlines.check(now: Self.ms(6000), Self.snapshot(ended: true))
        #expect(check == .arm(Self.ms(9000)))
    }

    @Test func aStalledResponseEndsByTheTimeoutOfWhoeverStalls() {
        // The client reads (writable): the upstream is silent, read_timeout (2 s) applies.
        var silentUpstream = Self.deadlines()
        _ = silentUpstream.requestSent(at: Self.t0)
        let firstCheck = silentUpstream.responseStarted(now: Self.ms(100))
        #expect(firstCheck == Self.ms(2100))
        let moving = silentUpstream.check(now: Self.ms(2100), Self.snapshot(ended: true, response: 10))
        #expect(moving == .arm(Self.ms(4100)), "the head's deadline is gone once the response began")
        let stallBegins = silentUpstream.check(now: Self.ms(4100), Self.snapshot(ended: true, response: 10))
        #expect(stallBegins == .arm(Self.ms(6100)))
        let stalled = silentUpstream.check(now: Self.ms(6100), Self.snapshot(ended: true, response: 10))
        #expect(stalled == .expired(.upstreamStalled), "no progress from 2.1 s to 6.1 s")

        // The client does not read: send_timeout (3 s) applies.
        var slowClient = Self.deadlines()
        _ = slowClient.responseStarted(now: Self.t0)
        let quiet = Self.snapshot(ended: true, response: 0, clientWritable: false)
        let begins = slowClient.check(now: Self.ms(2000), quiet)
        #expect(begins == .arm(Self.ms(4000)), "the stall began at the last check, t0")
        let within = slowClient.check(now: Self.ms(2999), quiet)
        #expect(within == .arm(Self.ms(4000)))
        let past = slowClient.check(now: Self.ms(4000), quiet)
        #expect(past == .expired(.clientStalled), "4 s without progress is past send_timeout")
    }

    @Test func theEarliestDeadlineIsArmed() {
        var deadlines = Self.deadlines()
        _ = deadlines.bodyArriving(now: Self.t0)
        _ = deadlines.requestSent(at: Self.ms(-4500))
        let check = deadlines.check(now: Self.ms(100), Self.snapshot(body: 1))
        #expect(check == .arm(Self.ms(500)), "the response head is due before the next body check")
    }
}
