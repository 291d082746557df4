import BearerdAuth
import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// Each of an exchange's deadlines through its machine, with the time given in: no channel, no
/// clock. (body_timeout 1 s, response_timeout 5 s, send_timeout 3 s, read_timeout 2 s.)
@Suite("An exchange's deadlines, through its machine")
struct ExchangeStateMachineDeadlineTests {
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func at(_ milliseconds: Int64) -> NIODeadline { Self.t0 + .milliseconds(milliseconds) }

    static func machine(hasBody: Bool = true) -> ExchangeStateMachine {
        var machine = ExchangeStateMachine(
            .init(closes: false, hasBody: hasBody, isUpgrade: false),
            timeouts: ExchangeDeadlinesTests.deadlines().timeouts
        )
        _ = machine.attached(expectsContinue: false)
        return machine
    }

    static func head(_ status: Int) throws -> ResponseHead {
        try ExchangeStateMachineExchangeTests.head(status)
    }

    /// Fires the timer every `step` ms from `from` until something expires or `until` passes.
    static func run(
        _ machine: inout ExchangeStateMachine,
        from: Int64,
        until: Int64,
        clientWritable: Bool = true
    ) -> (ExchangeDeadlines.Expiry, at: Int64)? {
        var time = from
        while time <= until {
            if case .expired(let expiry) = machine.timerFired(
                now: Self.at(time),
                readsHeld: false,
                clientWritable: clientWritable
            ) {
                return (expiry, time)
            }
            time += 50
        }
        return nil
    }

    @Test func aBodyThatPausesPastBodyTimeoutGets408AndTheConnectionCloses() throws {
        var machine = Self.machine()
        _ = machine.bodyArrived(ByteBuffer(string: "part"), maxBody: nil)
        #expect(machine.readEnded(now: Self.t0) == Self.at(250), "checked four times per body_timeout")
        #expect(machine.readEnded(now: Self.at(10)) == nil, "armed once")
        let expired = Self.run(&machine, from: 250, until: 3000)
        #expect(expired?.0 == .requestBodyStalled)
        #expect((1000...1250).contains(expired?.at ?? 0), "within 1 to 1.25 body_timeouts")
        let answer = machine.failed(status: 408)
        #expect(answer == .answer(close: true), "the rest of the body is not read")
        #expect(machine.timerFired(now: Self.at(9000), readsHeld: false, clientWritable: true) == .none)
    }

    @Test func aBodyThatKeepsComingOrThatBearerdHoldsBackDoesNotExpire() {
        var machine = Self.machine()
        _ = machine.readEnded(now: Self.t0)
        for step in 1...40 {
            _ = machine.bodyArrived(ByteBuffer(string: "x"), maxBody: nil)
            _ = machine.timerFired(now: Self.at(Int64(step) * 250), readsHeld: false, clientWritable: true)
        }
        machine.readsWereHeld()
        #expect(Self.run(&machine, from: 10_250, until: 10_300) == nil, "held reads are not the client's pause")
    }

    @Test func aResponseHeadLaterThanResponseTimeoutGets504AndARetryWaitsAgain() throws {
        var machine = Self.machine(hasBody: false)
        _ = machine.endArrived()
        #expect(machine.requestSent(at: Self.t0) == Self.at(5000))
        #expect(machine.requestSent(at: Self.at(100)) == nil, "one deadline runs")
        #expect(Self.run(&machine, from: 4900, until: 6000)?.at == 5000)

        var retried = Self.machine(hasBody: false)
        _ = retried.endArrived()
        _ = retried.requestSent(at: Self.t0)
        _ = retried.headArrived(
            try Self.head(401),
            token: BearerToken("a"),
            bodyKept: true,
            asksForNewNonce: false,
            framing: .length,
            now: Self.at(100)
        )
        #expect(Self.run(&retried, from: 4900, until: 6000) == nil, "a held 401 is a response head in time")
        _ = retried.heldEndArrived(keptBody: nil, now: Self.at(6000))
        _ = retried.providerDecided(BearerToken("b"), keptBody: nil, now: Self.at(6000))
        _ = retried.attached(expectsContinue: false)
        #expect(retried.requestSent(at: Self.at(6000)) == Self.at(11_000), "the retry waits for its own head")
    }

    @Test func aResponseThatStopsMovingEndsAtReadOrSendTimeout() throws {
        var upstreamStalls = Self.machine(hasBody: false)
        _ = upstreamStalls.endArrived()
        guard
            case .forward(let forward) = upstreamStalls.headArrived(
                try Self.head(200),
                token: nil,
                bodyKept: false,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a 200 was held")
            return
        }
        #expect(forward.progressCheck == Self.at(500), "a quarter of the shorter of send and read")
        let upstream = Self.run(&upstreamStalls, from: 500, until: 9000, clientWritable: true)
        #expect(upstream?.0 == .upstreamStalled && (2000...2500).contains(upstream?.at ?? 0))

        var clientStalls = Self.machine(hasBody: false)
        _ = clientStalls.endArrived()
        _ = clientStalls.headArrived(
            try Self.head(200),
            token: nil,
            bodyKept: false,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        clientStalls.responseBodySent(10)
        let client = Self.run(&clientStalls, from: 500, until: 9000, clientWritable: false)
        #expect(client?.0 == .clientStalled && (3000...3500).contains(client?.at ?? 0))
    }
}
