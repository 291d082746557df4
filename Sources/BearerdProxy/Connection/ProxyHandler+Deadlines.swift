import BearerdLogging
import Logging
import NIOCore

/// The client connection's deadlines, all served by one ``ConnectionTimer``:
/// - idle before a request (`proxy.client_idle_timeout`), a new connection's first one included:
///   closed without an answer;
/// - a request head, from its first byte (`proxy.header_timeout`): 408;
/// - a request body that stops coming while bearerd reads it (`proxy.body_timeout`): 408;
/// - the upstream's response head (`upstream.response_timeout`): 504;
/// - once the response head went out, a response that makes no progress: the client does not
///   read it (`proxy.send_timeout`) or the upstream sends nothing more while the client could
///   take it (`upstream.read_timeout`): both connections close, as the answer has begun.
///
/// The body is checked once per `body_timeout` rather than timed per read, so the data path pays
/// nothing: a check that finds no new bytes, while bearerd itself did not hold reads back, ends
/// the request. A stall is thus caught between one and two `body_timeout`s after it starts.
///
/// A new connection waits for its first byte as a kept-alive one waits for its next request:
/// a deadline from the accept would add nothing against a client that holds connections (one
/// cheap request buys it the idle timeout anyway) and would cut off honest clients on a machine
/// too busy to write within `header_timeout` of connecting.
extension ProxyHandler {
    /// The time on the connection's event loop: real time, or an EmbeddedEventLoop's in tests.
    var now: NIODeadline { self.context?.eventLoop.now ?? .now() }

    /// At the end of each read: bytes that formed no complete head start the head's clock, and a
    /// request whose body is still to come gets its first body check.
    func readEnded() {
        switch self.state {
        case .idle(_, nil) where self.inbound.readableBytes > 0:
            if let deadline = self.machine.headBytesWaiting(now: self.now) { self.arm(deadline) }
        case .exchanging(let exchange) where self.read(exchange, { !$0.requestEnded }) == true:
            let now = self.now
            if let check = self.update(exchange, { $0.readEnded(now: now) }) ?? nil { self.arm(check) }
        default:
            break
        }
    }

    func arm(_ deadline: NIODeadline) {
        guard let context, self.timer.needsArming(at: deadline) else { return }
        self.timer.arm(at: deadline, on: context.eventLoop) { self.timerFired() }
    }

    /// Does what the state machine says is due; an exchange's own deadlines are checked here.
    func timerFired() {
        self.timer.fired()
        let now = self.now
        switch self.machine.timerFired(now: now) {
        case .arm(let deadline):
            self.arm(deadline)
        case .answerHeadTimeout:
            self.answerAndClose(
                .requestTimeout(
                    "the request head was not complete within proxy.header_timeout (\(TimeAmount(self.settings.proxy.limits.headerTimeout).prettyPrint))"
                )
            )
        case .close:
            self.closeClient()
        case .checkExchange:
            if case .exchanging(let exchange) = self.state { self.exchangeTimerFired(exchange, now: now) }
        case .none:
            break
        }
    }

    /// Does what the exchange's deadlines say is due.
    private func exchangeTimerFired(_ exchange: Exchange, now: NIODeadline) {
        let readsHeld = self.readPending
        let clientWritable = self.clientIsWritable
        let check = self.update(exchange) {
            $0.timerFired(now: now, readsHeld: readsHeld, clientWritable: clientWritable)
        }
        switch check ?? .none {
        case .arm(let deadline):
            self.arm(deadline)
        case .none:
            break
        case .expired(.requestBodyStalled):
            self.update(exchange) { $0.closeAfter(.brokenRequest) }
            self.fail(
                exchange,
                .requestTimeout(
                    "the request body paused longer than proxy.body_timeout (\(TimeAmount(self.settings.proxy.limits.bodyTimeout).prettyPrint))"
                )
            )
        case .expired(.responseHeadLate):
            self.responseTimedOut(exchange)
        case .expired(.upstreamStalled):
            self.failures.warning(
                kind: "upstream_read_timeout",
                "the upstream sent nothing more within upstream.read_timeout; closing both connections",
                metadata: ["timeout": "\(TimeAmount(self.settings.upstream.readTimeout).prettyPrint)"],
                now: now
            )
            self.abandon(exchange, outcome: "upstream_read_timeout")
        case .expired(.clientStalled):
            self.failures.warning(
                kind: "send_timeout",
                "the client read nothing within proxy.send_timeout; closing both connections",
                metadata: ["timeout": "\(TimeAmount(self.settings.proxy.limits.sendTimeout).prettyPrint)"],
                now: now
            )
            self.abandon(exchange, outcome: "send_timeout")
        }
    }
}
