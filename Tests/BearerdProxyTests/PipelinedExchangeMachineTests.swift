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
    /// Stands for the exchange the connection's machine holds: its state, as a value.
    final class Ref {
        var machine: ExchangeStateMachine
        init(closes: Bool = false) {
            self.machine = ExchangeStateMachine(
                .init(closes: closes, hasBody: false, isUpgrade: false),
                timeouts: ExchangeDeadlinesTests.deadlines().timeouts
            )
        }
    }

    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func connection() -> ProxyHandler.StateMachine<Ref> {
        var connection = ProxyHandler.StateMachine<Ref>(
            headerTimeout: .seconds(1),
            idleTimeout: .seconds(5),
            lingerTime: .seconds(2)
        )
        _ = connection.accepted(now: Self.t0)
        return connection
    }

    /// One bodyless exchange, from its head to its response's end.
    static func serve(_ exchange: Ref) throws {
        _ = exchange.machine.endArrived()
        _ = exchange.machine.attached(expectsContinue: false)
        _ = exchange.machine.headArrived(
            try ExchangeStateMachineExchangeTests.head(200),
            token: BearerToken("t"),
            bodyKept: false,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        exchange.machine.responseBodySent(2)
        _ = exchange.machine.responseEnded()
    }

    @Test func theSecondRequestWaitsForTheFirstAndStartsWhenItEnds() throws {
        var connection = Self.connection()
        let first = Ref()
        let isLast = connection.begin(first)
        #expect(!isLast)
        // The second head is parsed only when the connection is not busy (`parseInbound`).
        #expect(connection.isBusy, "a pipelined head waits")
        try Self.serve(first)
        let end = connection.exchangeEnded(
            close: first.machine.closesConnection,
            requestEnded: first.machine.requestEnded,
            now: Self.t0 + .milliseconds(5)
        )
        #expect(end == .keepOpen(idleUntil: Self.t0 + .milliseconds(5005)))
        #expect(!connection.isBusy, "the pipelined request is parsed now")

        let second = Ref(closes: true)
        _ = connection.begin(second)
        try Self.serve(second)
        let last = connection.exchangeEnded(
            close: second.machine.closesConnection,
            requestEnded: second.machine.requestEnded,
            now: Self.t0 + .milliseconds(9)
        )
        #expect(last == .closeAfterWrite, "its client asked to close: the exchange's record says so")
        #expect(connection.dropsInput)
    }

    @Test func aReloadDuringTheFirstMakesItTheLastAndTheSecondIsNotServed() throws {
        var connection = Self.connection()
        let first = Ref()
        _ = connection.begin(first)
        connection.retire()?.machine.closeAfter(.retiring)
        try Self.serve(first)
        #expect(first.machine.closeReason == .retiring)
        let end = connection.exchangeEnded(
            close: first.machine.closesConnection,
            requestEnded: first.machine.requestEnded,
            now: Self.t0
        )
        #expect(end == .closeAfterWrite)
        #expect(connection.dropsInput, "the pipelined request is dropped: the client sends it again")
    }

    @Test func aResponseBeforeTheRequestEndedDiscardsItsRestThenServesTheNext() throws {
        var connection = Self.connection()
        let first = Ref()
        _ = connection.begin(first)
        _ = first.machine.attached(expectsContinue: false)
        let answer = first.machine.failed(status: 403)
        #expect(answer == .answer(close: false), "a bodyless request's end is dropped when it comes")
        _ = connection.exchangeEnded(close: false, requestEnded: false, now: Self.t0)
        #expect(connection.isBusy, "its end is still to come: a pipelined head waits behind it")
        connection.discardedRequestEnded()
        #expect(!connection.isBusy)
    }
}
