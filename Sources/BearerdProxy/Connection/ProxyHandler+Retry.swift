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
        let asked = exchange.machine.heldResponse
        // The refresh this 401 brings links to the request's span.
        let waiter = exchange.trace?.span.context
        context.eventLoop.makeFutureWithTask {
            guard let waiter else { return await tokens.upstreamRejected(token) }
            return await ServiceContext.withValue(waiter) { await tokens.upstreamRejected(token) }
        }
        .assumeIsolated()
        .whenComplete { result in
            guard self.isCurrent(exchange), let asked, exchange.machine.heldResponse === asked else { return }
            let fresh: BearerToken? = (try? result.get()) ?? nil
            self.proceed(
                exchange.machine.providerDecided(fresh, keptBody: exchange.retryBody.body, now: self.now),
                of: exchange
            )
        }
    }

    /// The held 401 is complete: its connection can serve again (the retry may take it).
    func heldEnded(_ exchange: Exchange) {
        if let connection = exchange.upstream {
            exchange.upstream = nil
            self.pool.release(connection, reusable: exchange.machine.upstreamKeepAlive)
        }
        self.proceed(exchange.machine.heldEndArrived(keptBody: exchange.retryBody.body, now: self.now), of: exchange)
    }

    /// Does what the machine says of the held 401: wait, send the request again, or pass the
    /// 401 on as it came.
    func proceed(_ action: ExchangeStateMachine.HeldAction, of exchange: Exchange) {
        switch action {
        case .wait:
            break
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
