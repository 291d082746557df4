import BearerdAuth
import BearerdWire
import NIOCore
import Tracing

/// Starting an exchange: the checks, the token (now, or after a wait of at most
/// `proxy.token_wait`), the upstream head, and a pooled or new upstream connection.
extension ProxyHandler {
    /// `resumed`: the request began on the handler a reload replaced, before anything of it went
    /// upstream (``takeOver(_:)``); it keeps the start and the span it had there.
    func begin(
        _ head: consuming RequestHead,
        context: ChannelHandlerContext,
        resumed: (startedAt: NIODeadline, trace: ExchangeTrace?)? = nil
    ) {
        // Everything asked of the head is asked before it moves into the exchange, uncopied.
        let verdict = RequestPolicy.check(head, settings: self.shared, viaTCP: self.viaTCP, local: self.local)
        let clientKeepsOwnAuthorization =
            self.settings.proxy.clientAuthorization == .keep && head.contains("authorization")
        // The body is kept for a retry after a 401 only when such a retry can happen.
        let retryPossible =
            !clientKeepsOwnAuthorization && self.settings.proxy.retryMethods.contains(head.method.rawValue)
        let facts = ExchangeStateMachine.RequestFacts(head)
        let exchange = Exchange(request: head, startedAt: resumed?.startedAt ?? self.now)
        if let resumed {
            // Counted, and its span started, where it began.
            exchange.trace = resumed.trace
        } else {
            if let tracing = self.settings.tracing {
                exchange.trace = ExchangeTrace(head: exchange.request, tracing: tracing, session: self.settings.session)
            }
            self.metrics.started()
        }
        // After a reload, the next response says `Connection: close` and is the last.
        self.machine.begin(exchange, ExchangeStateMachine(facts, timeouts: self.exchangeTimeouts))
        if self.machine.reloaded {
            // Its head came after a reload: the settings this connection holds are not the
            // config in force. The client sends it again on a new connection.
            self.fail(exchange, .reloaded)
            return
        }
        switch verdict {
        case .forward(let target):
            exchange.target = target
        case .answer(let failure):
            self.fail(exchange, failure)
            return
        }
        // A request taken over from a reload waited already: it does not go "as it began".
        self.beginning = resumed == nil
        defer { self.beginning = false }
        if retryPossible { exchange.retryBody = RetryBody(budget: self.retryBudget) }
        if clientKeepsOwnAuthorization {
            self.prepare(exchange, token: nil)
        } else if let token = self.tokens.currentToken() {
            self.prepare(exchange, token: token)
        } else {
            self.waitForToken(exchange, context: context)
        }
    }

    /// Waits for the token provider, at most `proxy.token_wait`: then the request gets 503 with
    /// the time of the provider's next real attempt, while the refresh goes on for the others.
    func waitForToken(_ exchange: Exchange, context: ChannelHandlerContext) {
        let tokens = self.tokens
        self.update(exchange) { $0.waitForToken() }
        exchange.trace?.tokenWaitStarted = self.now
        // The refresh this request waits for links to its span.
        let waiter = exchange.trace?.span.context
        let giveUp = context.eventLoop.assumeIsolated().scheduleTask(
            in: TimeAmount(self.settings.proxy.limits.tokenWait)
        ) {
            guard self.read(exchange, { $0.tokenWaitExpired() }) == true else { return }
            var failure = ProxyFailure.tokenWaitExceeded(TimeAmount(self.settings.proxy.limits.tokenWait))
            failure.retryAfterSeconds = tokens.secondsUntilNextAttempt() ?? 1
            self.fail(exchange, failure)
        }
        self.calls.answer(on: context.eventLoop) {
            guard let waiter else { return try await tokens.token() }
            return try await ServiceContext.withValue(waiter) { try await tokens.token() }
        }
        .assumeIsolated()
        .whenComplete { result in
            giveUp.cancel()
            guard self.isCurrent(exchange) else { return }
            if let started = exchange.trace?.tokenWaitStarted { exchange.trace?.tokenWait = self.now - started }
            switch result {
            case .success(let token): self.prepare(exchange, token: token)
            case .failure(let error):
                self.fail(exchange, Self.tokenFailure(error, retryAfter: tokens.secondsUntilNextAttempt() ?? 1))
            }
        }
    }

    /// Writes the upstream head and connects; `fresh`: not on a pooled connection.
    func prepare(_ exchange: Exchange, token: BearerToken?, fresh: Bool = false) {
        guard self.context != nil, let target = exchange.target, self.update(exchange, { $0.connecting() }) == true
        else { return }
        exchange.token = token
        var head = self.upstreamHeads.take(capacity: 512)
        // The settings go in their shared box: passed by value, even borrowed, the compiler
        // copied the whole struct for the call (some 29 retains and 28 releases per request,
        // counted with `scripts/bench-count --callers`).
        let proof = token.flatMap { self.dpopProof(for: exchange, target: target, token: $0) }
        let peer = self.peer
        let trace = exchange.trace?.upstreamFields
        let (framing, upgrade) = HeaderRewriter.upstreamRequest(
            exchange.request,
            target: target,
            token: token,
            proof: proof,
            peer: peer,
            settings: self.shared,
            trace: trace,
            into: &head
        )
        exchange.requestFraming = framing
        if upgrade != .none { self.upgradeRequested(upgrade, by: exchange) }
        exchange.upstreamHead = head
        self.upstreamHeads.keep(head)
        self.connect(exchange, fresh: fresh)
    }

    func connect(_ exchange: Exchange, fresh: Bool) {
        switch self.pool.acquire(fresh: fresh) {
        case .ready(let connection):
            self.attach(exchange, to: connection)
        case .connecting(let future):
            future.assumeIsolated().whenComplete { result in
                switch result {
                case .success(let connection) where self.isCurrent(exchange):
                    self.attach(exchange, to: connection)
                case .success(let connection):
                    self.pool.release(connection, reusable: true)
                case .failure(let error):
                    if self.isCurrent(exchange) { self.fail(exchange, self.connectFailure(error)) }
                }
            }
        }
    }

    private func attach(_ exchange: Exchange, to connection: UpstreamConnection) {
        let expectsContinue = exchange.expectsContinue
        guard let head = exchange.upstreamHead, let context,
            let attachment = self.update(exchange, { $0.attached(expectsContinue: expectsContinue) })
        else {
            // Not the exchange in flight any more (never: `connect` asks): the connection serves another.
            self.pool.release(connection, reusable: true)
            return
        }
        connection.lease(to: self, method: exchange.request.method, upgrade: exchange.upgrade != nil)
        exchange.upstream = connection
        exchange.attachedAtStart = self.beginning
        // Attached as it began: the clock was read a moment ago.
        exchange.upstreamStartedAt = self.beginning ? exchange.startedAt : self.now
        if attachment.sendContinue {
            context.writeAndFlush(self.wrapOutboundOut(WireFormat.continueResponse), promise: nil)
        }
        connection.write(head)
        for part in attachment.parts {
            switch part {
            case .body(let buffer): self.sendBody(buffer, of: exchange, to: connection)
            case .end: self.sendEnd(of: exchange, to: connection)
            case .head: break
            }
        }
        if !self.inRead { connection.flush() }
        if attachment.requestComplete { self.startResponseTimeout(exchange) }
        if connection.isWritable { self.resumeClientReads() }
    }

    /// `exchange` is the one in flight, and not over.
    func isCurrent(_ exchange: Exchange) -> Bool {
        self.read(exchange) { $0.isLive } ?? false
    }
}
