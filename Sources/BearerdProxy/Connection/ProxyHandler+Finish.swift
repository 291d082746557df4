import BearerdAuth
import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix

extension ProxyHandler {
    /// The upstream's response ended: pool the connection if it can carry another request.
    func finish(_ exchange: Exchange) {
        guard let end = self.update(exchange, { $0.responseEnded() }) else {
            // Not the exchange in flight (never: its connection's parts reach only that one).
            exchange.closeUpstream()
            return
        }
        if let connection = exchange.upstream {
            exchange.upstream = nil
            self.pool.release(connection, reusable: end.reusable)
        }
        self.complete(exchange, end: end.chunked ? WireFormat.lastChunk : nil)
    }

    /// Answers the request with bearerd's own JSON error. When a request body is still unread,
    /// the client connection is closed after the answer rather than reading the body to its end;
    /// a bodyless request keeps the connection (its end is dropped when it arrives).
    func fail(_ exchange: Exchange, _ failure: ProxyFailure) {
        exchange.closeUpstream()
        let status = Int(failure.status.code)
        // A late failure of an exchange that ended says nothing to the connection's next one.
        guard let action = self.update(exchange, { $0.failed(status: status) }) else { return }
        guard let context, case .answer(let close) = action else {
            self.abandon(exchange, outcome: failure.error)
            return
        }
        let (head, body) = failure.response(
            version: exchange.request.version,
            close: close,
            allocator: context.channel.allocator
        )
        let bytes = body.readableBytes
        self.update(exchange) { $0.responseBodySent(bytes) }
        var out = context.channel.allocator.buffer(capacity: 256 + body.readableBytes)
        WireFormat.writeResponseHead(head, into: &out)
        out.writeImmutableBuffer(body)
        context.write(self.wrapOutboundOut(out), promise: nil)
        if failure.status.code >= 500 {
            // One of a kind at once, then a summary per window: an outage fails every request.
            self.failures.warning(
                kind: failure.error,
                "request failed",
                metadata: ["status": "\(failure.status.code)", "error": "\(failure.message)"],
                now: self.now
            )
        }
        self.complete(exchange, end: nil)
    }

    /// Ends the response to the client, logs it and readies the connection for the next request.
    private func complete(_ exchange: Exchange, end: ByteBuffer?) {
        guard let context else {
            // The handler left the pipeline: nobody to answer, but the exchange gets its line.
            self.closeClient(outcome: "client_closed")
            return
        }
        self.writeHeldHead(context: context)
        let now = self.now
        guard let (action, ended) = self.machine.exchangeEnded(exchange, now: now) else { return }
        if case .keepOpen(let idleUntil) = action { self.arm(idleUntil) }
        self.logAccess(exchange, ended, outcome: nil, now: now)
        switch action {
        case .closeAfterWrite(let linger):
            self.timer.cancel()
            context.writeAndFlush(self.wrapOutboundOut(end ?? WireFormat.empty)).assumeIsolated().whenComplete { _ in
                // Bytes past the request, from a client that said it was done, are a reason to.
                if linger || self.inbound.readableBytes > 0 { self.linger() } else { self.closeClient() }
            }
        case .keepOpen:
            if let end { context.write(self.wrapOutboundOut(end), promise: nil) }
            self.pool.endOfTurn.client(context)
            self.servePipelined()
        }
    }

    /// The exchange cannot end cleanly (client gone, or upstream gone after the response head
    /// was sent): drop both connections.
    func abandon(_ exchange: Exchange, outcome: String) {
        guard self.machine.isInFlight(exchange) else {
            // One that ended was logged then, and the connection serves another now.
            exchange.closeUpstream()
            return
        }
        self.closeClient(outcome: outcome)
    }

    /// Closes the client connection; an exchange still in flight ends with it, logged once with
    /// `outcome`, and its upstream connection closes (it cannot carry another request).
    func closeClient(outcome: String = "connection_closed") {
        // Closing drops what is not flushed; a held head goes the same way.
        self.heldHead = nil
        let exchange = self.machine.inFlight
        if let exchange, let ended = self.machine.closed() {
            exchange.closeUpstream()
            self.logAccess(exchange, ended, outcome: outcome)
        }
        self.machine.closed()
        self.timer.cancel()
        self.context?.close(promise: nil)
    }

    /// After the last response: half-closes, then drops whatever the client still sends until it
    /// closes too, for up to ``lingerTime``. Closing with unread input makes the kernel send a
    /// reset, which can destroy the response (a 408, a 413) before the client reads it; nginx's
    /// lingering close does the same.
    func linger() {
        guard let context, context.channel.isActive else { return }
        let until = self.machine.lingerStarted(now: self.now)
        self.inbound = WireFormat.empty
        self.resumeClientReads()
        context.close(mode: .output).assumeIsolated().whenFailure { _ in context.close(promise: nil) }
        self.arm(until)
    }

    // MARK: Client connection events

    func channelInactive(context: ChannelHandlerContext) {
        // An exchange still in flight, live or not, has no line yet: it gets one, and its span ends.
        if let exchange = self.machine.inFlight { self.abandon(exchange, outcome: "client_closed") }
        self.machine.closed()
        self.timer.cancel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // What a lingering client still sends is dropped, parseable or not.
        if case .lingering = self.state { return }
        self.logger.debug("client connection error", metadata: ["error": "\(error)"])
        if let exchange = self.machine.inFlight, self.isCurrent(exchange) {
            self.abandon(exchange, outcome: "client_error")
        } else {
            self.closeClient()
        }
    }

    /// Answers with bearerd's own error when no request head was parsed, then closes.
    func answerAndClose(_ failure: ProxyFailure) {
        let exchange = Exchange(request: .placeholder, startedAt: self.now)
        var machine = ExchangeStateMachine(.init(exchange.request), timeouts: self.exchangeTimeouts)
        machine.closeAfter(.brokenRequest)
        self.metrics.started()
        self.machine.begin(exchange, machine)
        self.fail(exchange, failure)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        let action: StateMachine.QuiesceAction
        if let retire = event as? ProxyRetireEvent {
            // A reload: nothing more is forwarded under the settings this connection began with.
            // With nothing sent under them yet (idle, a head arriving, a request waiting for its
            // token or connection), it is served with the new ones as if it came now.
            if self.canBeTakenOver, let successor = retire.successor(self.viaTCP, self.caller, context.eventLoop) {
                self.handOver(to: successor, context: context)
                return
            }
            // Bytes of a next request already here (a pipelined one, parsed outside a read):
            // its head is arriving, so it is let end, then refused, not cut off.
            if self.inbound.readableBytes > 0, let deadline = self.machine.headBytesWaiting(now: self.now) {
                self.arm(deadline)
            }
            action = self.machine.retire()
        } else if event is ChannelShouldQuiesceEvent {
            // Graceful shutdown: idle connections close now, busy ones after their response.
            action = self.machine.quiesce()
        } else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        switch action {
        case .close:
            // A response that ended in this turn goes out first: its flush waits for the turn's end.
            context.flush()
            self.closeClient()
        case .refuse(let exchange):
            self.fail(exchange, .reloaded)
        case .none:
            // Busy: the exchange's machine now closes the connection after its response.
            break
        }
    }

    /// Leaves the connection to `successor`, a handler of the new settings: this one's timer
    /// stops, and what it took in but did not act on goes on there (``ProxyTakeover``).
    private func handOver(to successor: ProxyHandler, context: ChannelHandlerContext) {
        // A response that ended in this turn waits for the turn's end to be flushed, through this
        // handler: it goes now, before the handler leaves.
        context.flush()
        let pipeline = context.pipeline.syncOperations
        do {
            try pipeline.addHandler(successor, position: .after(self))
        } catch {
            // Nothing moved: what is in flight here is answered or logged here.
            self.closeClient()
            return
        }
        self.timer.cancel()
        let takeover = self.takeover()
        self.machine.closed()
        pipeline.removeHandler(self, promise: nil)
        successor.takeOver(takeover)
    }

    // MARK: Helpers

    func connectFailure(_ error: any Error) -> ProxyFailure {
        let upstream = self.settings.upstream.target.description
        if case ChannelError.connectTimeout = error {
            return .upstreamTimeout(
                upstream,
                what:
                    "did not accept a connection within upstream.connect_timeout (\(TimeAmount(self.settings.upstream.connectTimeout).prettyPrint))"
            )
        }
        return .upstreamUnreachable(upstream, reason: Self.describe(error))
    }

    /// The 503 for a request that got no token. It always carries `Retry-After`: the error's own,
    /// else `retryAfter` (when the provider tries next, or a second).
    static func tokenFailure(_ error: any Error, retryAfter: Int) -> ProxyFailure {
        guard let unavailable = error as? TokenUnavailableError else {
            return ProxyFailure(
                status: .serviceUnavailable,
                error: "token_unavailable",
                message: "bearerd has no token to send: \(error)",
                retryAfterSeconds: retryAfter
            )
        }
        return ProxyFailure(
            status: .serviceUnavailable,
            error: unavailable.errorName,
            message: unavailable.message,
            retryAfterSeconds: unavailable.retryAfterSeconds ?? retryAfter
        )
    }

    static func describe(_ error: any Error) -> String {
        if let connectionError = error as? NIOConnectionError {
            return connectionError.connectionErrors.first.map { "\($0.error)" } ?? "\(connectionError)"
        }
        return "\(error)"
    }
}
