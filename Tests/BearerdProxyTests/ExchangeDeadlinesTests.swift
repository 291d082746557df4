import NIOCore
import Testing

@testable import BearerdProxy

/// An exchange's deadlines on their own: times and byte counts in, what is due out.
@Suite("Exchange deadlines")
struct ExchangeDeadlinesTests {
    static let t0 = NIODeadline.uptimeNanoseconds(5_000_000_000)

    /// `value` milliseconds after the exchange began.
    static func ms(_ value: Int64) -> NIODeadline { Self.t0 + .milliseconds(value) }

    /// body 1 s, response head 5 s, send 3 s, read 2 s (so the body is checked every 250 ms, the
    /// response every 500 ms).
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

    /// Follows the deadlines from `start` as the handler's timer would, with `bytes(t)` body or
    /// response bytes moved by time `t`, until something expires (or `limit`): when, and what.
    static func run(
        _ deadlines: inout ExchangeDeadlines,
        from start: NIODeadline,
        limit: NIODeadline = Self.ms(60_000),
        _ snapshot: (NIODeadline) -> ExchangeDeadlines.Snapshot
    ) -> (at: NIODeadline, expiry: ExchangeDeadlines.Expiry)? {
        var now = start
        while now < limit {
            switch deadlines.check(now: now, snapshot(now)) {
            case .expired(let expiry): return (now, expiry)
            case .arm(let next): now = next
            case .none: return nil
            }
        }
        return nil
    }

    @Test func aBodyThatKeepsComingIsCheckedAgainAndOneThatPausesExpires() {
        var deadlines = Self.deadlines()
        let first = deadlines.bodyArriving(now: Self.t0)
        #expect(first == Self.ms(250), "a quarter of body_timeout")
        let again = deadlines.bodyArriving(now: Self.ms(10))
        #expect(again == nil, "the first check is set once")
        let early = deadlines.check(now: Self.ms(249), Self.snapshot(body: 0))
        #expect(early == .arm(Self.ms(250)))
        // Bytes until 2.6 s, then nothing: expired one body_timeout after the check that saw the
        // last of them, within 1.25 s of the last byte.
        let end = Self.run(&deadlines, from: Self.ms(250)) { now in
            Self.snapshot(body: now < Self.ms(2600) ? Int((now - Self.t0).nanoseconds / 1_000_000) : 2600)
        }
        #expect(end?.expiry == .requestBodyStalled)
        #expect(end.map { $0.at >= Self.ms(3600) && $0.at <= Self.ms(3850) } == true, "\(String(describing: end))")
    }

    @Test func aBodyHeldBackByBearerdIsNotTheClientsFault() {
        var deadlines = Self.deadlines()
        _ = deadlines.bodyArriving(now: Self.t0)
        // Held until 3 s (the upstream could not take more), then released, and nothing comes.
        let heldNow = deadlines.check(now: Self.ms(250), Self.snapshot(body: 0, readsHeld: true))
        #expect(heldNow == .arm(Self.ms(500)))
        let end = Self.run(&deadlines, from: Self.ms(500)) { now in
            Self.snapshot(body: 0, readsHeld: now < Self.ms(3000))
        }
        #expect(end?.expiry == .requestBodyStalled)
        #expect(end.map { $0.at >= Self.ms(3750) && $0.at <= Self.ms(4250) } == true, "\(String(describing: end))")
        // Held between two checks only (readsWereHeld): that interval is not the client's either.
        var between = Self.deadlines()
        _ = between.bodyArriving(now: Self.t0)
        _ = between.check(now: Self.ms(250), Self.snapshot(body: 0))
        between.readsWereHeld()
        _ = between.check(now: Self.ms(500), Self.snapshot(body: 0))
        let stillFine = between.check(now: Self.ms(1250), Self.snapshot(body: 0))
        #expect(stillFine == .arm(Self.ms(1500)), "1 s after the held interval ended, not after the start")
    }

    /// Issue 35: with send_timeout 3s a client that stopped reading was closed after 9 s. Every
    /// timeout now fires between one and 1.25 of it after the last byte moved, wherever that falls.
    @Test(arguments: [0, 1, 137, 499, 500, 501, 999, 1777, 2999])
    func aStallEndsWithinAQuarterOfItsTimeoutAfterTheLastByte(lastMoveMilliseconds: Int64) {
        let lastMove = Self.ms(1000 + lastMoveMilliseconds)
        for clientWritable in [true, false] {
            var deadlines = Self.deadlines()
            let first = deadlines.responseStarted(now: Self.t0)
            let end = Self.run(&deadlines, from: first) { now in
                let moved =
                    now < lastMove ? Int((now - Self.t0).nanoseconds / 1_000_000) : Int(lastMoveMilliseconds) + 1000
                return Self.snapshot(ended: true, response: moved, clientWritable: clientWritable)
            }
            let timeout: TimeAmount = clientWritable ? .seconds(2) : .seconds(3)
            let after = end.map { $0.at - lastMove } ?? .seconds(99)
            #expect(end?.expiry == (clientWritable ? .upstreamStalled : .clientStalled))
            #expect(after >= timeout && after <= timeout + .milliseconds(500) + .nanoseconds(timeout.nanoseconds / 4))
        }
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
        #expect(firstCheck == Self.ms(600), "a quarter of the shorter of send and read timeouts")
        let moving = silentUpstream.check(now: Self.ms(600), Self.snapshot(ended: true, response: 10))
        #expect(moving == .arm(Self.ms(1100)), "the head's deadline is gone once the response began")
        let silent = Self.run(&silentUpstream, from: Self.ms(1100)) { _ in Self.snapshot(ended: true, response: 10) }
        #expect(silent?.expiry == .upstreamStalled)
        #expect(silent?.at == Self.ms(2600), "2 s after the check that saw the last bytes")

        // The client does not read: send_timeout (3 s) applies.
        var slowClient = Self.deadlines()
        let first = slowClient.responseStarted(now: Self.t0)
        let quiet = Self.snapshot(ended: true, response: 0, clientWritable: false)
        let within = slowClient.check(now: Self.ms(2999), quiet)
        #expect(within == .arm(Self.ms(3499)))
        #expect(first == Self.ms(500))
        let past = Self.run(&slowClient, from: Self.ms(3499)) { _ in quiet }
        #expect(past?.expiry == .clientStalled)
        #expect(past?.at == Self.ms(3499), "3 s without progress is send_timeout")
    }

    @Test func theEarliestDeadlineIsArmed() {
        var deadlines = Self.deadlines()
        _ = deadlines.bodyArriving(now: Self.t0)
        _ = deadlines.requestSent(at: Self.ms(-4500))
        let check = deadlines.check(now: Self.ms(300), Self.snapshot(body: 1))
        #expect(check == .arm(Self.ms(500)), "the response head is due before the next body check")
    }
}
