import BearerdAuth
import Logging
import NIOCore
import NIOHTTP1

/// A 401 held back from the client while the token provider decides whether the request is
/// sent again with a new token. A class: the data path asks "is one held?" for every response
/// part, and that must be a pointer check, not a copy of a head.
final class HeldResponse {
    /// A held 401 body larger than this goes to the client as it is, without a retry.
    static let maxBody = 64 * 1024

    var head: ResponseHead
    var body: [ByteBuffer] = []
    var bodyBytes = 0
    var ended = false
    /// `nil` until the provider answers; then the token to retry with, or `.some(nil)`: no retry.
    var decision: BearerToken??
    /// The upstream asked for a DPoP nonce: the retry goes with the same token.
    var forNonce = false

    init(head: ResponseHead) {
        self.head = head
    }
}

extension ProxyHandler {
    /// Whether a 401 to this exchange may be answered by a refresh and one more try: only once,
    /// only for a request bearerd added a token to, whose body is complete and was kept.
    func mayRetry(_ exchange: Exchange) -> Bool {
        !exchange.authRetried && exchange.requestEnded && exchange.retryPossible
    }

    /// Holds the 401 and asks the provider for a new token; a provider that sees `token`
    /// already replaced answers with the current one without refreshing again.
    func hold(_ head: ResponseHead, of exchange: Exchange, sentWith token: BearerToken, context: ChannelHandlerContext)
    {
        exchange.held = HeldResponse(head: head)
        let tokens = self.tokens
        context.eventLoop.makeFutureWithTask { await tokens.upstreamRejected(token) }
            .assumeIsolated()
            .whenComplete { result in
                guard self.isCurrent(exchange), exchange.held != nil else { return }
                let fresh: BearerToken? = (try? result.get()) ?? nil
                exchange.held?.decision = .some(fresh)
                self.resolveHeld(exchange)
            }
    }

    func holdBody(_ buffer: ByteBuffer, of exchange: Exchange) {
        exchange.held?.body.append(buffer)
        exchange.held?.bodyBytes += buffer.readableBytes
        if let held = exchange.held, held.bodyBytes > HeldResponse.maxBody {
            self.release(held, of: exchange)
        }
    }

    func holdEnd(of exchange: Exchange) {
        exchange.held?.ended = true
        // The 401 is complete: its connection can serve again (the retry may take it).
        if let connection = exchange.upstream {
            exchange.upstream = nil
            self.pool.release(connection, reusable: exchange.upstreamKeepAlive)
        }
        self.resolveHeld(exchange)
    }

    /// Once the 401 is complete and the provider has answered: retry, or pass the 401 on.
    private func resolveHeld(_ exchange: Exchange) {
        guard let held = exchange.held, held.ended, let decision = held.decision else { return }
        guard let token = decision, token != exchange.token || held.forNonce else {
            self.release(held, of: exchange)
            return
        }
        exchange.held = nil
        exchange.authRetried = true
        self.metrics.retried()
        exchange.phase = .preparing
        exchange.responseStatus = nil
        let body = exchange.retryBody
        exchange.dropRetryBody()
        exchange.buffered = (body.map { [.body($0)] } ?? []) + [.end]
        self.prepare(exchange, token: token)
        self.logger.debug(
            held.forNonce
                ? "retrying a request the upstream answered 401 with its new DPoP nonce"
                : "retrying a request the upstream answered 401 with a new token"
        )
    }

    /// Sends the held 401 to the client as if it had never been held.
    private func release(_ held: HeldResponse, of exchange: Exchange) {
        exchange.held = nil
        exchange.dropRetryBody()
        self.upstreamReceived(.head(held.head))
        for buffer in held.body { self.upstreamReceived(.body(buffer)) }
        if held.ended {
            if exchange.upstream == nil {
                // Its connection went back to the pool already: end the exchange here.
                self.finish(exchange)
            } else {
                self.upstreamReceived(.end)
            }
        }
    }
}
