import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// Upgrades (RFC 9110 §7.8, `proxy.allow_upgrades`, WebSocket by default): the request goes
/// upstream with the token and the allowed protocols of its `Upgrade` (``UpgradeOffer``); when
/// the upstream's 101 switches to one of them the two connections are spliced as bytes
/// (``SpliceHandler``) until either side closes. Any other 101 gets 502 and closes both.
extension ProxyHandler {
    /// A request with `Upgrade` and `Connection: upgrade` is the last on its connection (the
    /// parser stops after it, as llhttp does); it went upstream with the protocols offered, if any.
    func upgradeRequested(_ upgrade: UpgradeOffer.Decision, by exchange: Exchange) {
        self.update(exchange) { $0.closeAfter(.upgrade) }
        if case .offer(let offer) = upgrade { exchange.upgrade = offer }
    }

    /// The upstream answered 101: when it switched to what the request offered, the 101 goes
    /// to the client, then both connections are spliced. The client's connection leaves HTTP:
    /// what it sent after the request goes upstream, and this handler leaves the pipeline.
    func upstreamSwitched(_ head: ResponseHead, rest: ByteBuffer) {
        guard let exchange = self.machine.inFlight else { return }
        guard self.read(exchange, { $0.isForwarding }) == true, let offer = exchange.upgrade,
            let connection = exchange.upstream,
            let context
        else {
            // The parser takes a 101 only when the lease asked for one: never trust it anyway
            // (`fail` closes the upstream connection).
            self.update(exchange) { $0.closeAfter(.brokenUpstream) }
            self.fail(exchange, .upstreamFailed(self.settings.upstream.target.description, reason: "an unasked 101"))
            return
        }
        let upgraded: String
        switch offer.answer(to: head) {
        case .splice(let name):
            upgraded = name
        case .broken(let reason):
            // Not a switch to what was offered: spliced, the client's next bytes would reach the
            // upstream as raw HTTP past every check. Neither connection carries anything more
            // (the client's: the parser stopped at the upgrade request).
            self.fail(exchange, .upstreamFailed(self.settings.upstream.target.description, reason: reason))
            return
        }
        exchange.upstream = nil
        self.update(exchange) { $0.switched() }
        exchange.retryBody.drop()
        // The connection leaves HTTP: the exchange's record is its last line.
        if let ended = self.machine.closed() { self.logAccess(exchange, ended, outcome: nil) }
        self.timer.cancel()
        var out = context.channel.allocator.buffer(capacity: head.bytes.readableBytes + 32)
        HeaderRewriter.switchingResponse(head, upgrade: upgraded, into: &out)
        context.write(self.wrapOutboundOut(out), promise: nil)
        let (client, upstream) = SpliceHandler.pair(
            idleTimeout: TimeAmount(self.settings.proxy.limits.clientIdleTimeout),
            now: self.now
        )
        do {
            let pipeline = context.pipeline.syncOperations
            try pipeline.addHandler(client, position: .before(self))
            client.send(rest, flush: false)
            context.flush()
            connection.splice(into: upstream)
            upstream.send(self.inbound, flush: true)
            self.inbound = WireFormat.empty
            pipeline.removeHandler(self, promise: nil)
            client.startReading()
        } catch {
            self.failures.error(
                kind: "splice_failed",
                "cannot splice an upgraded connection; closing it",
                metadata: ["error": "\(error)"],
                now: self.now
            )
            connection.close()
            context.close(promise: nil)
        }
    }
}

/// Leaves the client's pipeline when its connection is spliced.
extension ProxyHandler: RemovableChannelHandler {}
