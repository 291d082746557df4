import BearerdAuth
import BearerdConfig
import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

extension ProxyHandler: UpstreamConnectionOwner {
    var clientIsWritable: Bool { self.context?.channel.isWritable ?? false }

    func upstreamReceived(_ part: ResponseParser.Part) {
        guard case .exchanging(let exchange) = self.state, exchange.course.isForwarding, let context else { return }
        switch part {
        case .head(let head):
            exchange.deadlines.stopWaitingForResponseHead()
            exchange.responseStatus = HTTPResponseStatus(statusCode: head.status)
            exchange.upstreamKeepAlive = head.keepAlive
            let answer = UpstreamAnswer(
                status: head.status,
                sentWithToken: exchange.token != nil,
                rejectionReported: exchange.rejectionReported,
                mayRetry: self.mayRetry(exchange),
                asksForNewNonce: self.settings.dpop != nil && self.takeNonce(head, of: exchange)
            )
            switch (answer.action, exchange.token) {
            case (.holdForNonce, let token?):
                exchange.held = HeldResponse(head: head, nonceRetryWith: token)
                return
            case (.holdForRefresh, let token?):
                exchange.rejectionReported = true
                self.hold(head, of: exchange, sentWith: token, context: context)
                return
            case (.forward(reportRejection: true), let token?):
                exchange.rejectionReported = true
                let tokens = self.tokens
                context.eventLoop.makeFutureWithTask { _ = await tokens.upstreamRejected(token) }.whenComplete { _ in }
            case (.forward, _), (.holdForNonce, nil), (.holdForRefresh, nil):
                break
            }
            if exchange.retriedWithFreshToken, let token = exchange.token {
                // Once per retry: whether the token fresh from the refresh a 401 forced was
                // taken, so a path that refuses every token stops forcing refreshes.
                exchange.retriedWithFreshToken = false
                let tokens = self.tokens
                let refused = head.status == 401 && !answer.asksForNewNonce
                context.eventLoop.makeFutureWithTask { await tokens.freshTokenAnswered(token, refused: refused) }
                    .whenComplete { _ in }
            }
            // This answer goes to the client: no retry can follow, so the kept body goes.
            exchange.dropRetryBody()
            let version = exchange.request.version
            let framing = HeaderRewriter.clientFraming(head, method: exchange.request.method, version: version)
            exchange.responseFraming = framing
            if !exchange.requestEnded || framing == .close { exchange.closeClientAfter = true }
            var out = self.clientHeads.take(capacity: head.bytes.readableBytes + 64)
            HeaderRewriter.clientResponse(
                head,
                version: version,
                framing: framing,
                close: exchange.closeClientAfter,
                into: &out
            )
            exchange.responseHeadSent = true
            self.heldHead = out
            self.arm(exchange.deadlines.responseStarted(now: self.now))
        case .body(let buffer) where exchange.held != nil:
            self.holdBody(buffer, of: exchange)
        case .end where exchange.held != nil:
            self.holdEnd(of: exchange)
        case .body(let buffer):
            exchange.responseBodyBytes += buffer.readableBytes
            switch exchange.responseFraming {
            case .none:
                break
            case .length, .close:
                if self.writeHeldHead(appending: buffer, chunked: false, context: context) { return }
                context.write(self.wrapOutboundOut(buffer), promise: nil)
            case .chunked where buffer.readableBytes > 0:
                if self.writeHeldHead(appending: buffer, chunked: true, context: context) { return }
                if let chunk = WireFormat.smallChunk(buffer, allocator: context.channel.allocator) {
                    context.write(self.wrapOutboundOut(chunk), promise: nil)
                    return
                }
                let header = WireFormat.chunkHeader(length: buffer.readableBytes, allocator: context.channel.allocator)
                context.write(self.wrapOutboundOut(header), promise: nil)
                context.write(self.wrapOutboundOut(buffer), promise: nil)
                context.write(self.wrapOutboundOut(WireFormat.crlf), promise: nil)
            case .chunked:
                break
            }
        case .end:
            self.finish(exchange)
        }
    }

    /// Sends a piece of the request body upstream, in the framing the upstream head announced.
    func sendBody(_ buffer: ByteBuffer, of exchange: Exchange, to upstream: UpstreamConnection) {
        guard exchange.requestFraming == .chunked else {
            upstream.write(buffer)
            return
        }
        // An empty chunk would end the body early.
        guard buffer.readableBytes > 0, let context else { return }
        if let chunk = WireFormat.smallChunk(buffer, allocator: context.channel.allocator) {
            upstream.write(chunk)
            return
        }
        upstream.write(WireFormat.chunkHeader(length: buffer.readableBytes, allocator: context.channel.allocator))
        upstream.write(buffer)
        upstream.write(WireFormat.crlf)
    }

    func sendEnd(of exchange: Exchange, to upstream: UpstreamConnection) {
        if exchange.requestFraming == .chunked { upstream.write(WireFormat.lastChunk) }
    }

    func upstreamReadComplete() {
        guard let context else { return }
        self.writeHeldHead(context: context)
        context.flush()
    }

    func upstreamBecameWritable() {
        self.resumeClientReads()
    }

    func upstreamFailed(_ error: any Error) {
        guard case .exchanging(let exchange) = self.state, exchange.course.isForwarding else { return }
        exchange.held = nil
        // An upstream that switches protocols unasked is not speaking HTTP with bearerd: the
        // client's connection closes too.
        if (error as? ProxyError) == ResponseParser.unaskedSwitch { exchange.closeClientAfter = true }
        let connection = exchange.closeUpstream()
        let failure = UpstreamFailure(
            responseStarted: exchange.responseHeadSent,
            connectionReused: (connection?.requestCount ?? 0) > 1,
            replayed: exchange.retried,
            requestEnded: exchange.requestEnded,
            requestBodyBytes: exchange.requestBodyBytes,
            idempotent: exchange.request.method.isIdempotent,
            malformedResponse: (error as? ProxyError)?.code == .badResponse,
            provesPossession: self.settings.dpop != nil
        )
        switch failure.action {
        case .abandon:
            self.failures.warning(
                kind: "upstream_closed",
                "upstream closed the connection in the middle of a response; closing the client connection",
                metadata: ["error": "\(error)"],
                now: self.now
            )
            self.abandon(exchange, outcome: "upstream_closed")
        case .replay(let reprove):
            // A pooled connection the upstream had already closed: the request goes once more.
            exchange.retried = true
            exchange.course.resend(body: nil)
            if reprove {
                self.prepare(exchange, token: exchange.token, fresh: true)
            } else {
                self.connect(exchange, fresh: true)
            }
        case .fail:
            self.fail(
                exchange,
                .upstreamFailed(self.settings.upstream.target.description, reason: Self.describe(error))
            )
        }
    }

    func startResponseTimeout(_ exchange: Exchange) {
        guard exchange.deadlines.responseHeadDue == nil, !exchange.responseHeadSent else { return }
        // A bodyless request that went upstream as it arrived was sent when it started: no need
        // to read the clock again. One that waited (token, connection) or had a body was sent now.
        let sent =
            exchange.requestBodyBytes == 0 && exchange.attachedAtStart ? exchange.startedAt : self.now
        if let due = exchange.deadlines.requestSent(at: sent) { self.arm(due) }
    }

    func responseTimedOut(_ exchange: Exchange) {
        self.fail(
            exchange,
            .upstreamTimeout(
                self.settings.upstream.target.description,
                what:
                    "sent no response head within upstream.response_timeout (\(TimeAmount(self.settings.upstream.responseTimeout).prettyPrint))"
            )
        )
    }

}

extension TimeAmount {
    var prettyPrint: String {
        let milliseconds = self.nanoseconds / 1_000_000
        return milliseconds % 1000 == 0 ? "\(milliseconds / 1000)s" : "\(milliseconds)ms"
    }
}
