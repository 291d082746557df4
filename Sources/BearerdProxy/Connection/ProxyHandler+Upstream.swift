import BearerdAuth
import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

extension ProxyHandler: UpstreamConnectionOwner {
    var clientIsWritable: Bool { self.context?.channel.isWritable ?? false }

    func upstreamReceived(_ part: ResponseParser.Part) {
        guard let exchange = self.machine.inFlight, let context else { return }
        // What the exchange's machine is waiting for, before this part changes it.
        let forwarding = self.read(exchange) { $0.isForwarding } ?? false
        switch part {
        case .head(let head):
            guard forwarding else { return }
            // (The method and the version, not a copy of the head: a copy retains its buffers.)
            let framing = HeaderRewriter.clientFraming(
                head,
                method: exchange.request.method,
                version: exchange.request.version
            )
            let token = exchange.token
            let bodyKept = exchange.retryBody.isKept
            let asksForNewNonce = self.settings.dpop != nil && self.takeNonce(head, of: exchange)
            // Read only for a 403 to a token bearerd added: the rare answer that asks for more.
            let challenge =
                head.status == 403 && token != nil
                ? ScopeChallenge.parse(head.values(of: "www-authenticate")) : nil
            let now = self.now
            let action = self.update(exchange) {
                $0.headArrived(
                    head,
                    token: token,
                    bodyKept: bodyKept,
                    asksForNewNonce: asksForNewNonce,
                    framing: framing,
                    challenge: challenge,
                    now: now
                )
            }
            switch action {
            case .forward(let forward): self.forwardHead(head, forward, of: exchange)
            case .askProvider(let refused): self.askProvider(about: refused, for: exchange, context: context)
            case .hold, nil: break
            }
        case .body(let buffer):
            if forwarding {
                self.forwardBody(buffer, of: exchange, context: context)
            } else {
                let kept = exchange.retryBody.body
                let now = self.now
                if let action = self.update(exchange, { $0.heldBodyArrived(buffer, keptBody: kept, now: now) }) {
                    self.proceed(action, of: exchange)
                }
            }
        case .end:
            if forwarding {
                self.finish(exchange)
            } else if self.read(exchange, { $0.heldResponse != nil }) == true {
                self.heldEnded(exchange)
            }
        }
    }

    /// The response head goes to the client (held until the first piece of body, to go with it).
    func forwardHead(_ head: ResponseHead, _ forward: ExchangeStateMachine.Forward, of exchange: Exchange) {
        if let token = forward.reportRejection {
            let tokens = self.tokens
            let path = exchange.request.uri
            self.calls.tell { _ = await tokens.upstreamRejected(token, path: path) }
        }
        if let (challenge, token) = forward.reportChallenge {
            let tokens = self.tokens
            let path = exchange.request.uri
            self.calls.tell { _ = await tokens.upstreamAskedForMore(challenge, token: token, path: path) }
        }
        if let (token, refused) = forward.freshTokenAnswer {
            let tokens = self.tokens
            let path = exchange.request.uri
            self.calls.tell { await tokens.freshTokenAnswered(token, refused: refused, path: path) }
        }
        // This answer goes to the client: no retry can follow, so the kept body goes.
        exchange.retryBody.drop()
        var out = self.clientHeads.take(capacity: head.bytes.readableBytes + 64)
        HeaderRewriter.clientResponse(
            head,
            version: exchange.request.version,
            framing: forward.framing,
            close: forward.close,
            into: &out
        )
        self.heldHead = out
        // Armed at the end of the turn, if the response is still under way then: most end in
        // the read that brought their head, and a timer armed and cancelled costs a scheduled
        // task each (see ``armProgressCheck()``).
        self.progressCheck = (exchange, forward.progressCheck)
        self.pool.endOfTurn.check(self)
    }

    /// At the end of the turn that forwarded a response head: the response's progress check,
    /// if it did not end in that turn.
    func armProgressCheck() {
        guard let (exchange, deadline) = self.progressCheck else { return }
        self.progressCheck = nil
        guard self.machine.inFlight === exchange else { return }
        self.arm(deadline)
    }

    /// A piece of the response body goes to the client, in the framing its head announced.
    func forwardBody(_ buffer: ByteBuffer, of exchange: Exchange, context: ChannelHandlerContext) {
        let bytes = buffer.readableBytes
        switch self.update(exchange, { $0.responseBodySent(bytes) }) ?? .none {
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
        guard case .exchanging(let exchange) = self.state else { return }
        let connectionReused = (exchange.upstream?.requestCount ?? 0) > 1
        let idempotent = exchange.request.method.isIdempotent
        let malformedResponse = (error as? ProxyError)?.code == .badResponse
        // An upstream that switches protocols unasked is not speaking HTTP with bearerd: the
        // client's connection closes too.
        let unaskedSwitch = (error as? ProxyError) == ResponseParser.unaskedSwitch
        let provesPossession = self.settings.dpop != nil
        let facts = self.update(exchange) {
            $0.upstreamFailed(
                connectionReused: connectionReused,
                idempotent: idempotent,
                malformedResponse: malformedResponse,
                unaskedSwitch: unaskedSwitch,
                provesPossession: provesPossession
            )
        }
        guard let action = facts ?? nil else { return }
        exchange.closeUpstream()
        switch action {
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
        // A bodyless request that went upstream as it arrived was sent when it started: no need
        // to read the clock again. One that waited (token, connection) or had a body was sent now.
        let attachedAtStart = exchange.attachedAtStart
        let startedAt = exchange.startedAt
        // (The loop, not `self`: the closure runs inside the connection machine's access.)
        let loop = self.context?.eventLoop
        let due = self.update(exchange) { machine in
            let sentAtStart = machine.requestBodyBytes == 0 && attachedAtStart
            return machine.requestSent(at: sentAtStart ? startedAt : loop?.now ?? .now())
        }
        if let due = due ?? nil { self.arm(due) }
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
