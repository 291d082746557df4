import BearerdWire
import NIOCore

/// What the handler of a reload's new settings takes over on a connection from the one it
/// replaces: the bytes not parsed yet and, when one came, the request that had not gone
/// upstream yet. Nothing of either was acted on under the old settings, so the new handler
/// serves them as if they came now: the client sees nothing of the reload.
struct ProxyTakeover {
    /// What the client sent that is not parsed yet (a head still arriving, or a pipelined request).
    var inbound: ByteBuffer
    /// When the head still arriving began: its `proxy.header_timeout` runs from then.
    var headSince: NIODeadline?
    /// A read the old handler held back.
    var readPending: Bool
    var unsent: Unsent?

    /// A request whose head came before the reload and that waited for a token or an upstream
    /// connection: it starts again under the new settings (checked, given its token, sent to
    /// the new upstream), in the record and the span it began with.
    struct Unsent {
        var head: RequestHead
        var startedAt: NIODeadline
        var trace: ExchangeTrace?
        /// The body parts, and its end, that came so far, in order.
        var parts: [RequestParser.Part]
        /// The parser, in the middle of this request.
        var parser: RequestParser
    }
}

extension ProxyHandler {
    /// Whether nothing on the connection went upstream under the settings it holds: it is idle
    /// (a head may be arriving), or its request waits for its first token or connection. Not
    /// once a graceful shutdown made its exchange the last: it ends as the shutdown said.
    var canBeTakenOver: Bool {
        guard !self.machine.quiescing else { return false }
        switch self.state {
        case .idle:
            return true
        case .exchanging(let exchange):
            return !self.beginning && self.read(exchange, { $0.isUnsent }) == true
        case .discarding, .lingering, .closed:
            return false
        }
    }

    /// What a successor takes over (``canBeTakenOver``); a request not sent ends here, unlogged,
    /// to go on there.
    func takeover() -> ProxyTakeover {
        var takeover = ProxyTakeover(inbound: self.inbound, readPending: self.readPending)
        self.inbound = WireFormat.empty
        self.readPending = false
        switch self.state {
        case .idle(_, let headSince):
            takeover.headSince = headSince
        case .exchanging(let exchange):
            guard let parts = self.update(exchange, { $0.takeUnsent() }) ?? nil else { break }
            takeover.unsent = ProxyTakeover.Unsent(
                head: exchange.request,
                startedAt: exchange.startedAt,
                trace: exchange.trace,
                parts: parts,
                parser: self.parser
            )
            exchange.trace = nil
        case .discarding, .lingering, .closed:
            break
        }
        return takeover
    }

    /// Serves, under this handler's settings, what the handler a reload replaced took in but
    /// did not act on. Called once this handler is in the pipeline, in the old one's place.
    ///
    /// A request taken over keeps the head it was parsed with: the head limits of the new
    /// settings (`proxy.max_header_size`, …) apply from the next request on; its body meets the
    /// new `proxy.max_request_body`.
    func takeOver(_ takeover: ProxyTakeover) {
        guard let context else { return }
        self.inbound = takeover.inbound
        self.readPending = takeover.readPending
        if let unsent = takeover.unsent {
            self.parser = unsent.parser.continued(under: self.settings.requestLimits)
            self.begin(unsent.head, context: context, resumed: (unsent.startedAt, unsent.trace))
            for part in unsent.parts { self.handle(part) }
        } else if let since = takeover.headSince, let deadline = self.machine.headBytesWaiting(now: since) {
            self.arm(deadline)
        }
        self.servePipelined()
    }
}
