import BearerdAuth
import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// Pipelined requests through the connection's machine and each exchange's, as the handler
/// drives them, without a channel or a clock: the second request waits while the first holds the
/// connection, starts when it ends, and the close decision of each exchange is what ends the
/// connection.
@Suite("Pipelined exchanges through the two machines")
struct PipelinedExchangeMachineTests {
    /// What an exchange holds while it runs; its state is in the connection's machine.
    static func ref() -> Exchange { Exchange(request: .placeholder, startedAt: Self.t0) }

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func connection() -> ProxyHandler.StateMachine {
        var connection = ProxyHandler.StateMachine(
            headerTimeout: .seconds(1),
            idleTimeout: .seconds(5),
            lingerTime: .seconds(2)
        )
        _ = connection.accepted(now: Self.t0)
        return connection
    }

    static func exchange(closes: Bool = false) -> ExchangeStateMachine {
        ExchangeStateMachine(
            .init(closes: closes, hasBody: false, isUpgrade: false),
            timeouts: ExchangeDeadlinesTests.deadlines().timeouts
        )
    }

    /// One bodyless exchange, from its head to its response's end, through the connection's
    /// machine as the handler drives it.
    static func serve(_ ref: Exchange, on connection: inout ProxyHandler.StateMachine) throws {
        let head = try ExchangeStateMachineExchangeTests.head(200)
        let served: Void? = connection.withExchange(of: ref) { exchange in
            _ = exchange.endArrived()
            _ = exchange.attached(expectsContinue: false)
            _ = exchange.headArrived(
                head,
                token: BearerToken("t"),
                bodyKept: false,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
            exchange.responseBodySent(2)
            _ = exchange.responseEnded()
        }
        #expect(served != nil, "the exchange was not the one in flight")
    }

    @Test func theSecondRequestWaitsForTheFirstAndStartsWhenItEnds() throws {
        var connection = Self.connection()
        let first = Self.ref()
        connection.begin(first, Self.exchange())
        // The second head is parsed only when the connection is not busy (`parseInbound`).
        #expect(connection.isBusy, "a pipelined head waits")
        try Self.serve(first, on: &connection)
        let end = connection.exchangeEnded(first, now: Self.t0 + .milliseconds(5))
        #expect(end?.action == .keepOpen(idleUntil: Self.t0 + .milliseconds(5005)))
        #expect(end?.ended.response?.status == 200 && end?.ended.responseBodyBytes == 2)
        #expect(!connection.isBusy, "the pipelined request is parsed now")

        let second = Self.ref()
        connection.begin(second, Self.exchange())
        // A late event of the first reaches nothing: the second still keeps the connection open.
        #expect(connection.withExchange(of: first) { $0.closeAfter(.brokenRequest) } == nil)
        try Self.serve(second, on: &connection)
        let kept = connection.exchangeEnded(second, now: Self.t0 + .milliseconds(9))
        #expect(kept?.ended.closeReason == nil && kept?.action == .keepOpen(idleUntil: Self.t0 + .milliseconds(5009)))

        let third = Self.ref()
        connection.begin(third, Self.exchange(closes: true))
        try Self.serve(third, on: &connection)
        let last = connection.exchangeEnded(third, now: Self.t0 + .milliseconds(12))
        #expect(last?.action == .closeAfterWrite(linger: false), "its client asked to close: the record says so")
        #expect(connection.dropsInput)
    }

    @Test func aReloadDuringTheFirstMakesItTheLastAndTheSecondIsNotServed() throws {
        var connection = Self.connection()
        let first = Self.ref()
        connection.begin(first, Self.exchange())
        _ = connection.withExchange(of: first) { $0.attached(expectsContinue: false) }
        guard case .none = connection.retire() else {
            Issue.record("a forwarded exchange was cut off by a reload")
            return
        }
        try Self.serve(first, on: &connection)
        let end = connection.exchangeEnded(first, now: Self.t0)
        #expect(end?.ended.closeReason == .retiring)
        #expect(end?.action == .closeAfterWrite(linger: true))
        #expect(connection.dropsInput, "the pipelined request is dropped: the client sends it again")
    }

    @Test func aResponseBeforeTheRequestEndedDiscardsItsRestThenServesTheNext() throws {
        var connection = Self.connection()
        let first = Self.ref()
        connection.begin(first, Self.exchange())
        let answer = connection.withExchange(of: first) { exchange in
            _ = exchange.attached(expectsContinue: false)
            return exchange.failed(status: 403)
        }
        #expect(answer == .answer(close: false), "a bodyless request's end is dropped when it comes")
        let end = connection.exchangeEnded(first, now: Self.t0)
        #expect(end?.action == .keepOpen(idleUntil: Self.t0 + .seconds(5)))
        #expect(connection.isBusy, "its end is still to come: a pipelined head waits behind it")
        _ = connection.discardedRequestEnded()
        #expect(!connection.isBusy)
        let next = Self.ref()
        connection.begin(next, Self.exchange())
        try Self.serve(next, on: &connection)
        #expect(connection.exchangeEnded(next, now: Self.t0 + .seconds(1))?.ended.response?.status == 200)
    }
}
