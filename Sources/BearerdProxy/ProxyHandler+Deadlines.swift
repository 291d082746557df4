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
        case .idle where self.inbound.readableBytes > 0:
            if let deadline = self.machine.headBytesWaiting(now: self.now) { self.arm(deadline) }
        case .exchanging(let exchange) where !exchange.requestEnded && exchange.bodyCheckAt == nil:
            let deadline = self.now + self.settings.bodyTimeout
            exchange.bodyCheckAt = deadline
            self.arm(deadline)
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
                    "the request head was not complete within proxy.header_timeout (\(self.settings.headerTimeout.prettyPrint))"
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

    private func exchangeTimerFired(_ exchange: Exchange, now: NIODeadline) {
        if let check = exchange.bodyCheckAt, !exchange.requestEnded, exchange.phase != .finished {
            if now >= check {
                let stalled =
                    exchange.requestBodyBytes == exchange.bodyBytesAtCheck && !exchange.readsHeld && !self.readPending
                if stalled {
                    exchange.closeClientAfter = true
                    self.fail(
                        exchange,
                        .requestTimeout(
                            "the request body paused longer than proxy.body_timeout (\(self.settings.bodyTimeout.prettyPrint))"
                        )
                    )
                    return
                }
                exchange.bodyBytesAtCheck = exchange.requestBodyBytes
                exchange.readsHeld = self.readPending
                exchange.bodyCheckAt = now + self.settings.bodyTimeout
            }
            self.arm(exchange.bodyCheckAt!)
        }
        if let check = exchange.progressCheckAt, exchange.responseHeadSent, exchange.phase != .finished {
            if now >= check {
                if self.responseStalled(exchange, now: now) { return }
                exchange.progressCheckAt = now + self.progressInterval
            }
            self.arm(exchange.progressCheckAt!)
        }
        if let deadline = exchange.responseDeadline, !exchange.responseHeadSent {
            if now >= deadline {
                self.responseTimedOut(exchange)
            } else {
                self.arm(deadline)
            }
        }
    }

    /// How often a response in progress is checked: the shorter of the two timeouts, so a stall
    /// is caught within one to two of them.
    var progressInterval: TimeAmount { min(self.settings.sendTimeout, self.settings.readTimeout) }

    func startProgressChecks(_ exchange: Exchange) {
        let check = self.now + self.progressInterval
        exchange.progressCheckAt = check
        self.arm(check)
    }

    /// Whether the response stalled past its timeout (it is then abandoned).
    private func responseStalled(_ exchange: Exchange, now: NIODeadline) -> Bool {
        guard exchange.responseBodyBytes == exchange.progressBytes else {
            exchange.progressBytes = exchange.responseBodyBytes
            exchange.stalledSince = nil
            return false
        }
        guard let since = exchange.stalledSince else {
            exchange.stalledSince = now - self.progressInterval
            return false
        }
        let clientReads = self.clientIsWritable
        let limit = clientReads ? self.settings.readTimeout : self.settings.sendTimeout
        guard now - since >= limit else { return false }
        self.logger.warning(
            clientReads
                ? "the upstream sent nothing more within upstream.read_timeout; closing both connections"
                : "the client read nothing within proxy.send_timeout; closing both connections",
            metadata: ["timeout": "\(limit.prettyPrint)"]
        )
        self.abandon(exchange, outcome: clientReads ? "upstream_read_timeout" : "send_timeout")
        return true
    }
}
