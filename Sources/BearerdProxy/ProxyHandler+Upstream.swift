import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOHTTP1

extension ProxyHandler: UpstreamConnectionOwner {
    var clientIsWritable: Bool { self.context?.channel.isWritable ?? false }

    func upstreamReceived(_ part: HTTPClientResponsePart) {
        guard case .exchanging(let exchange) = self.state, exchange.phase == .forwarding, let context else { return }
        switch part {
        case .head(let head):
            exchange.responseDeadline = nil
            exchange.responseStatus = head.status
            exchange.upstreamKeepAlive = head.isKeepAlive
            if head.status == .unauthorized, let token = exchange.token {
                let tokens = self.tokens
                context.eventLoop.makeFutureWithTask { await tokens.upstreamRejected(token) }.whenComplete { _ in }
            }
            if !exchange.requestEnded || self.needsCloseToDelimit(head, for: exchange.request) {
                exchange.closeClientAfter = true
            }
            let response = HeaderRewriter.clientResponse(head, for: exchange.request, close: exchange.closeClientAfter)
            exchange.responseHeadSent = true
            context.write(self.wrapOutboundOut(.head(response)), promise: nil)
        case .body(let buffer):
            exchange.responseBodyBytes += buffer.readableBytes
            context.write(self.wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .end(let trailers):
            self.finish(exchange, trailers: trailers)
        }
    }

    func upstreamReadComplete() {
        self.context?.flush()
    }

    func upstreamBecameWritable() {
        self.resumeClientReads()
    }

    func upstreamFailed(_ error: any Error) {
        guard case .exchanging(let exchange) = self.state, exchange.phase == .forwarding else { return }
        let connection = exchange.closeUpstream()
        if exchange.responseHeadSent {
            self.logger.warning(
                "upstream closed the connection in the middle of a response; closing the client connection",
                metadata: ["error": "\(error)"]
            )
            self.abandon(exchange, outcome: "upstream_closed")
            return
        }
        let reused = (connection?.requestCount ?? 0) > 1
        if reused && !exchange.retried && exchange.requestEnded && exchange.requestBodyBytes == 0 {
            // A pooled connection the upstream had already closed: replay the bodyless request once.
            exchange.retried = true
            exchange.phase = .preparing
            self.connect(exchange, fresh: true)
            return
        }
        self.fail(exchange, .upstreamFailed(self.settings.target.description, reason: Self.describe(error)))
    }

    func startResponseTimeout(_ exchange: Exchange) {
        guard let context, exchange.responseDeadline == nil, !exchange.responseHeadSent else { return }
        // A bodyless request that went upstream as it arrived was sent when it started: no need
        // to read the clock again. One that waited (token, connection) or had a body was sent now.
        let sent =
            exchange.requestBodyBytes == 0 && exchange.attachedAtStart ? exchange.startedAt : NIODeadline.now()
        let deadline = sent + self.settings.responseTimeout
        exchange.responseDeadline = deadline
        if self.timer.needsArming(at: deadline) {
            self.timer.arm(at: deadline, on: context.eventLoop) { self.timerFired() }
        }
    }

    /// The connection is between requests: it may stay so for `proxy.client_idle_timeout`.
    func becameIdle() {
        guard let context else { return }
        self.idleSince = .now()
        let deadline = self.idleSince + self.settings.clientIdleTimeout
        if self.timer.needsArming(at: deadline) {
            self.timer.arm(at: deadline, on: context.eventLoop) { self.timerFired() }
        }
    }

    private func timerFired() {
        self.timer.fired()
        guard let context else { return }
        let now = NIODeadline.now()
        switch self.state {
        case .idle, .discarding:
            let deadline = self.idleSince + self.settings.clientIdleTimeout
            if now >= deadline {
                self.closeClient()
            } else {
                self.timer.arm(at: deadline, on: context.eventLoop) { self.timerFired() }
            }
        case .exchanging(let exchange):
            guard let deadline = exchange.responseDeadline, !exchange.responseHeadSent else { return }
            if now >= deadline {
                self.responseTimedOut(exchange)
            } else {
                self.timer.arm(at: deadline, on: context.eventLoop) { self.timerFired() }
            }
        case .closed:
            break
        }
    }

    private func responseTimedOut(_ exchange: Exchange) {
        self.fail(
            exchange,
            .upstreamTimeout(
                self.settings.target.description,
                what:
                    "sent no response head within upstream.response_timeout (\(self.settings.responseTimeout.prettyPrint))"
            )
        )
    }

    /// An HTTP/1.0 client can only learn where a body without Content-Length ends by the close.
    private func needsCloseToDelimit(_ head: HTTPResponseHead, for request: HTTPRequestHead) -> Bool {
        request.version.minor == 0 && request.method != .HEAD && head.status.mayHaveResponseBody
            && !head.headers.contains(name: "content-length")
    }
}

extension HTTPResponseStatus {
    var mayHaveResponseBody: Bool {
        !(100..<200).contains(self.code) && self != .noContent && self != .notModified
    }
}

extension TimeAmount {
    var prettyPrint: String {
        let milliseconds = self.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }
}
