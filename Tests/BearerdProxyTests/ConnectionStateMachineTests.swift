import NIOCore
import Testing

@testable import BearerdProxy

/// The client connection's state machine on its own: events in, actions out, no channel and no
/// clock but the times the tests pass.
@Suite("Client connection state machine")
struct ConnectionStateMachineTests {
    final class Job {}
    typealias Machine = ProxyHandler.StateMachine<Job>

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// `value` milliseconds after the connection was accepted.
    static func ms(_ value: Int64) -> NIODeadline { Self.t0 + .milliseconds(value) }

    /// A machine for a connection accepted at `t0`: header timeout 300 ms, idle and linger 2 s.
    static func accepted() -> Machine {
        var machine = Machine(headerTimeout: .milliseconds(300), idleTimeout: .seconds(2), lingerTime: .seconds(2))
        let idleUntil = machine.accepted(now: Self.t0)
        #expect(idleUntil == Self.ms(2000))
        return machine
    }

    @Test func aConnectionIsClosedUntilAccepted() {
        let machine = Machine(headerTimeout: .seconds(1), idleTimeout: .seconds(1), lingerTime: .seconds(1))
        guard case .closed = machine.state else {
            Issue.record("\(machine.state)")
            return
        }
        #expect(machine.dropsInput)
    }

    @Test func anIdleConnectionClosesAtTheIdleTimeoutAndNotBefore() {
        var machine = Self.accepted()
        // The timer may fire early (it serves several deadlines): the machine re-arms.
        let early = machine.timerFired(now: Self.ms(1999))
        #expect(early == .arm(Self.ms(2000)))
        let due = machine.timerFired(now: Self.ms(2000))
        #expect(due == .close)
        #expect(machine.dropsInput)
        let later = machine.timerFired(now: Self.ms(5000))
        #expect(later == .none)
    }

    @Test func aHeadHasTheHeaderTimeoutFromItsFirstBytesOnly() {
        var machine = Self.accepted()
        let first = machine.headBytesWaiting(now: Self.ms(100))
        #expect(first == Self.ms(400))
        // More pieces of the same head do not move its clock.
        let more = machine.headBytesWaiting(now: Self.ms(350))
        #expect(more == nil)
        let early = machine.timerFired(now: Self.ms(399))
        #expect(early == .arm(Self.ms(400)))
        let due = machine.timerFired(now: Self.ms(400))
        #expect(due == .answerHeadTimeout)
    }

    @Test func aKeptAliveConnectionWaitsForItsNextRequestFromTheEndOfTheLast() {
        var machine = Self.accepted()
        _ = machine.headBytesWaiting(now: Self.ms(10))
        let isLast = machine.begin(Job())
        #expect(!isLast, "nothing asked for this exchange to be the last")
        #expect(machine.isBusy)
        let during = machine.timerFired(now: Self.ms(5000))
        #expect(during == .checkExchange, "an exchange's own deadlines decide, not the head's")
        let end = machine.exchangeEnded(close: false, requestEnded: true, now: Self.ms(6000))
        #expect(end == .keepOpen(idleUntil: Self.ms(8000)))
        #expect(!machine.isBusy)
        let idle = machine.timerFired(now: Self.ms(7000))
        #expect(idle == .arm(Self.ms(8000)))
        // The clock of the head before is gone: the next head starts its own.
        let next = machine.headBytesWaiting(now: Self.ms(7500))
        #expect(next == Self.ms(7800))
    }

    @Test func theRestOfAnAnsweredRequestIsDroppedAndTheIdleClockRunsFromTheAnswer() {
        var machine = Self.accepted()
        _ = machine.begin(Job())
        let end = machine.exchangeEnded(close: false, requestEnded: false, now: Self.ms(100))
        #expect(end == .keepOpen(idleUntil: Self.ms(2100)))
        #expect(machine.isBusy, "a pipelined request waits for the end of the answered one")
        let head = machine.headBytesWaiting(now: Self.ms(200))
        #expect(head == nil, "the rest of a body starts no head clock")
        machine.discardedRequestEnded()
        #expect(!machine.isBusy)
        let due = machine.timerFired(now: Self.ms(2100))
        #expect(due == .close)
    }

    @Test func aLastResponseClosesThenLingersForTheLingerTime() {
        var machine = Self.accepted()
        _ = machine.begin(Job())
        let end = machine.exchangeEnded(close: true, requestEnded: true, now: Self.ms(100))
        #expect(end == .closeAfterWrite)
        #expect(machine.dropsInput)
        let until = machine.lingerStarted(now: Self.ms(150))
        #expect(until == Self.ms(2150))
        #expect(machine.dropsInput)
        let early = machine.timerFired(now: Self.ms(2000))
        #expect(early == .arm(Self.ms(2150)))
        let due = machine.timerFired(now: Self.ms(2150))
        #expect(due == .close)
    }

    @Test func gracefulShutdownClosesAnIdleConnectionAndMakesABusyOnesResponseTheLast() {
        var idle = Self.accepted()
        guard case .close = idle.quiesce() else {
            Issue.record("an idle connection was kept at shutdown")
            return
        }
        #expect(idle.dropsInput)

        var busy = Self.accepted()
        let job = Job()
        _ = busy.begin(job)
        guard case .lastExchange(let last) = busy.quiesce() else {
            Issue.record("a busy connection was not told to end after its response")
            return
        }
        #expect(last === job)
        // The exchange records that it is the last (`ExchangeStateMachine.closeAfter(.retiring)`)
        // and says so when it ends: one record, not two.
        let end = busy.exchangeEnded(close: true, requestEnded: true, now: Self.ms(10))
        #expect(end == .closeAfterWrite)
    }

    @Test func afterAReloadTheNextExchangeIsTheConnectionsLast() {
        var machine = Self.accepted()
        let running = machine.retire()
        #expect(running == nil, "no exchange runs")
        #expect(!machine.dropsInput, "an idle connection is not closed under a client that may be sending")
        let isLast = machine.begin(Job())
        #expect(isLast, "the exchange that begins is told it is the last")

        var busy = Self.accepted()
        let job = Job()
        _ = busy.begin(job)
        let last = busy.retire()
        #expect(last === job)
    }
}
