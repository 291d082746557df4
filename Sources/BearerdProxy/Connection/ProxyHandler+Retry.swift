import BearerdAuth
import BearerdWire
import Logging
import NIOCore
import Tracing

/// A 401 to a token bearerd added, held while the provider decides (``HeldResponse``), then
/// sent again or passed on, as the exchange's machine says (``ExchangeStateMachine``).
extension ProxyHandler {
    /// Asks the provider for a token other than the one the upstream refused, while the 401 is
    /// held; a provider that sees `token` already replaced answers with the current one without
    /// refreshing again.
    func askProvider(about token: BearerToken, for exchange: Exchange, context: ChannelHandlerContext) {
        let tokens = self.tokens
        // The answer is for this hold only (not for a later one of the same exchange).
        let asked = self.read(exchange) { $0.heldResponse } ?? nil
        // The refresh this 401 brings links to the request's span.
        let waiter = exchange.trace?.span.context
        // A path that refuses every token pauses the refreshes its own 401s force, not others'.
        let path = exchange.request.uri
        let challenge = asked?.challenge
        self.calls.answer(on: context.eventLoop) {
            let ask: @Sendable () async -> BearerToken? = {
                if let challenge { return await tokens.upstreamAskedForMore(challenge, token: token, path: path) }
                return await tokens.upstreamRejected(token, path: path)
            }
            guard let waiter else { return await ask() }
            return await ServiceContext.withValue(waiter) { await ask() }
        }
        .assumeIsolated()
        .whenComplete { result in
            guard let asked, self.read(exchange, { $0.heldResponse === asked }) == true else { return }
            let fresh: BearerToken? = (try? result.get()) ?? nil
            let kept = exchange.retryBody.body
            let now = self.now
            guard let action = self.update(exchange, { $0.providerDecided(fresh, keptBody: kept, now: now) }) else {
                return
            }
            self.proceed(action, of: exchange)
        }
    }

    /// The held 401 is complete: its connection can serve again (the retry may take it).
    func heldEnded(_ exchange: Exchange) {
        if let connection = exchange.upstream {
            exchange.upstream = nil
            self.pool.release(connection, reusable: self.read(exchange) { $0.upstreamKeepAlive } ?? false)
        }
        let kept = exchange.retryBody.body
        let now = self.now
        guard let action = self.update(exchange, { $0.heldEndArrived(keptBody: kept, now: now) }) else { return }
        self.proceed(action, of: exchange)
    }

    /// Does what the machine says of the held 401: wait, send the request again, or pass the
    /// 401 on as it came.
    func proceed(_ action: ExchangeStateMachine.HeldAction, of exchange: Exchange) {
        switch action {
        case .wait:
            break
        case .retry where self.machine.reloaded:
            // Sent again, it would go to the upstream of the settings a reload replaced.
            self.fail(exchange, .reloaded)
        case .retry(let token, let fresh):
            self.metrics.retried()
            // The machine holds the kept body for the next connection; its budget goes back.
            exchange.retryBody.drop()
            self.prepare(exchange, token: token)
            self.logger.debug(
                fresh
                    ? "retrying a request the upstream answered 401 with a new token"
                    : "retrying a request the upstream answered 401 with its new DPoP nonce"
            )
        case .release(let forward, let head, let body, let ended):
            guard let context else { return }
            self.forwardHead(head, forward, of: exchange)
            for piece in body { self.forwardBody(piece, of: exchange, context: context) }
            if ended { self.finish(exchange) }
        }
    }
}
