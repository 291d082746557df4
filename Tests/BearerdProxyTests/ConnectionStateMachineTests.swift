import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// The client connection's state machine on its own: events in, actions out, no channel and no
/// clock but the times the tests pass.
@Suite("Client connection state machine")
struct ConnectionStateMachineTests {
    typealias Machine = ProxyHandler.StateMachine

    /// What an exchange holds while it runs; its state is the machine's.
    static func job() -> Exchange { Exchange(request: .placeholder, startedAt: Self.t0) }

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// `value` milliseconds after the connection was accepted.
    static func ms(_ value: Int64) -> NIODeadline { Self.t0 + .milliseconds(value) }

    /// An exchange's machine as the handler begins it: `closes`: its client asked to close;
    /// `ended`: its request came in whole.
    static func exchange(closes: Bool = false, ended: Bool = true) -> ExchangeStateMachine {
        var exchange = ExchangeStateMachine(
            .init(closes: closes, hasBody: false, isUpgrade: false),
            timeouts: ExchangeDeadlinesTests.deadlines().timeouts
        )
        if ended { _ = exchange.endArrived() }
        return exchange
    }

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
        let job = Self.job()
        machine.begin(job, Self.exchange())
        #expect(machine.readExchange(of: job) { $0.closeReason } == .some(nil), "nothing asked for it to be the last")
        #expect(machine.isBusy)
        let during = machine.timerFired(now: Self.ms(5000))
        #expect(during == .checkExchange, "an exchange's own deadlines decide, not the head's")
        #expect(machine.exchangeEnded(Self.job(), now: Self.ms(5500)) == nil, "another exchange ends nothing")
        let end = machine.exchangeEnded(job, now: Self.ms(6000))
        #expect(end?.action == .keepOpen(idleUntil: Self.ms(8000)))
        #expect(!machine.isInFlight(job))
        #expect(!machine.isBusy)
        // Its state went with it: nothing of it is left to change or to hand back.
        #expect(machine.withExchange(of: job) { $0.closeAfter(.brokenRequest) } == nil)
        #expect(machine.readExchange(of: job) { $0.requestEnded } == nil)
        let idle = machine.timerFired(now: Self.ms(7000))
        #expect(idle == .arm(Self.ms(8000)))
        // The clock of the head before is gone: the next head starts its own.
        let next = machine.headBytesWaiting(now: Self.ms(7500))
        #expect(next == Self.ms(7800))
    }

    @Test func theRestOfAnAnsweredRequestIsDroppedAndTheIdleClockRunsFromTheAnswer() {
        var machine = Self.accepted()
        let job = Self.job()
        machine.begin(job, Self.exchange(ended: false))
        let end = machine.exchangeEnded(job, now: Self.ms(100))
        #expect(end?.action == .keepOpen(idleUntil: Self.ms(2100)))
        #expect(machine.isBusy, "a pipelined request waits for the end of the answered one")
        #expect(machine.inFlight == nil && machine.closed() == nil, "the exchange's state left with it")
        machine = Self.accepted()
        machine.begin(job, Self.exchange(ended: false))
        _ = machine.exchangeEnded(job, now: Self.ms(100))
        let head = machine.headBytesWaiting(now: Self.ms(200))
        #expect(head == nil, "the rest of a body starts no head clock")
        _ = machine.discardedRequestEnded()
        #expect(!machine.isBusy)
        let due = machine.timerFired(now: Self.ms(2100))
        #expect(due == .close)
    }

    /// A client that asked to close and sent its request whole sends nothing more (RFC 9112
    /// §9.6): its connection closes after the response, without lingering, as nginx's does.
    @Test func aClientThatAskedToCloseAndSentItsRequestWholeIsNotLingeredFor() {
        var machine = Self.accepted()
        let job = Self.job()
        machine.begin(job, Self.exchange(closes: true))
        let end = machine.exchangeEnded(job, now: Self.ms(100))
        #expect(end?.action == .closeAfterWrite(linger: false))
        #expect(machine.dropsInput)
    }

    @Test func aLastResponseBeforeTheRequestsEndClosesThenLingersForTheLingerTime() {
        var machine = Self.accepted()
        let job = Self.job()
        machine.begin(job, Self.exchange(closes: true, ended: false))
        let end = machine.exchangeEnded(job, now: Self.ms(100))
        #expect(end?.action == .closeAfterWrite(linger: true))
        #expect(end?.ended.closeReason == .clientAsked, "the ended exchange's record comes back, for its log line")
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
        let job = Self.job()
        busy.begin(job, Self.exchange())
        guard case .none = busy.quiesce() else {
            Issue.record("a busy connection was closed under its exchange")
            return
        }
        // The exchange records that it is the last (`ExchangeStateMachine.closeAfter(.retiring)`)
        // and says so when it ends: one record, not two.
        #expect(busy.readExchange(of: job) { $0.closeReason } == .retiring)
        let end = busy.exchangeEnded(job, now: Self.ms(10))
        #expect(end?.action == .closeAfterWrite(linger: true), "its client may send another request")
    }

    /// After a reload no request goes upstream under the old settings: an idle connection
    /// closes at once, an exchange not forwarded yet is refused, one forwarded is the last.
    @Test func aReloadClosesAnIdleConnectionRefusesAnUnsentExchangeAndEndsAfterASentOne() {
        var idle = Self.accepted()
        guard case .close = idle.retire() else {
            Issue.record("an idle connection stayed open across a reload: its next request would meet the old settings")
            return
        }
        #expect(idle.dropsInput)

        // A head half arrived is let end: it is then refused (reloaded), never cut off unanswered.
        var arriving = Self.accepted()
        _ = arriving.headBytesWaiting(now: Self.ms(1))
        guard case .none = arriving.retire() else {
            Issue.record("a request whose head was arriving was cut off")
            return
        }
        #expect(!arriving.dropsInput && arriving.reloaded)

        var unsent = Self.accepted()
        let waiting = Self.job()
        unsent.begin(waiting, Self.exchange())
        guard case .refuse(let refused) = unsent.retire(), refused === waiting else {
            Issue.record("an exchange not yet forwarded would go out under the old settings")
            return
        }
        #expect(unsent.readExchange(of: waiting) { $0.closeReason } == .retiring)

        var busy = Self.accepted()
        let job = Self.job()
        busy.begin(job, Self.exchange())
        _ = busy.withExchange(of: job) { $0.attached(expectsContinue: false) }
        guard case .none = busy.retire() else {
            Issue.record("a forwarded exchange was cut off by a reload")
            return
        }
        #expect(busy.readExchange(of: job) { $0.closeReason } == .retiring, "the exchange in flight is the last")
    }

    @Test func theExchangeInFlightKeepsItsStateAndALateEventOfAnotherChangesNothing() {
        var machine = Self.accepted()
        let job = Self.job()
        machine.begin(job, Self.exchange(ended: false))
        // Held parts (not attached yet) stay in the machine the connection holds.
        let held = machine.withExchange(of: job) { $0.bodyArrived(ByteBuffer(string: "abc"), maxBody: nil) }
        guard case .hold? = held else {
            Issue.record("a body part before a connection was not held: \(String(describing: held))")
            return
        }
        let attachment = machine.withExchange(of: job) { $0.attached(expectsContinue: false) }
        #expect(attachment?.parts.count == 1, "the held part was kept in place")
        #expect(machine.readExchange(of: job) { $0.requestBodyBytes } == 3)

        // One not in flight, as a late token or timer of an ended exchange names it.
        let late = Self.job()
        #expect(machine.withExchange(of: late) { $0.closeAfter(.brokenRequest) } == nil)
        #expect(machine.readExchange(of: job) { $0.closesConnection } == false, "another's event reached it")
        #expect(!machine.isInFlight(late) && machine.isInFlight(job))

        // Closing hands back the record of the exchange that was in flight.
        let record = machine.closed()
        #expect(record?.requestBodyBytes == 3)
        #expect(machine.closed() == nil && machine.withExchange(of: job) { $0.finished() } == nil)
    }
}
