import NIOCore

/// One end of a connection that switched protocols (101, `proxy.allow_upgrades`): what this
/// channel reads goes to the other end's channel as it is, flushed at the end of each read, and
/// reading stops while the other end cannot take more. Either end closing closes both. Both ends
/// live on one event loop (the upstream pool is per loop), so no bytes hop threads.
///
/// The client end also keeps the idle limit (`proxy.client_idle_timeout`): when no byte has moved
/// either way for that long, both close.
final class SpliceHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// When a byte last moved, either way; shared by the two ends.
    final class Activity {
        var last: NIODeadline

        init(since: NIODeadline) { self.last = since }
    }

    private var context: ChannelHandlerContext?
    /// The other end; set before either is added, dropped at close.
    var peer: SpliceHandler?
    private let activity: Activity
    private let idleTimeout: TimeAmount?
    private var idleCheck: Scheduled<Void>?
    private var readPending = false

    /// `idleTimeout`: given to one end only, which runs the check for both.
    init(activity: Activity, idleTimeout: TimeAmount?) {
        self.activity = activity
        self.idleTimeout = idleTimeout
    }

    /// Joins two new ends; `now`: the event loop's time as they start.
    static func pair(idleTimeout: TimeAmount, now: NIODeadline) -> (client: SpliceHandler, upstream: SpliceHandler) {
        let activity = Activity(since: now)
        let client = SpliceHandler(activity: activity, idleTimeout: idleTimeout)
        let upstream = SpliceHandler(activity: activity, idleTimeout: nil)
        client.peer = upstream
        upstream.peer = client
        return (client, upstream)
    }

    var isWritable: Bool { self.context?.channel.isWritable ?? false }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if let idleTimeout = self.idleTimeout { self.scheduleIdleCheck(at: self.activity.last + idleTimeout) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        self.context = nil
    }

    /// Writes bytes the other end read (or the upstream sent right after its 101).
    func send(_ bytes: ByteBuffer, flush: Bool) {
        guard let context, bytes.readableBytes > 0 else { return }
        self.activity.last = context.eventLoop.now
        if flush {
            context.writeAndFlush(self.wrapOutboundOut(bytes), promise: nil)
        } else {
            context.write(self.wrapOutboundOut(bytes), promise: nil)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.peer?.send(self.unwrapInboundIn(data), flush: false)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.peer?.context?.flush()
    }

    func read(context: ChannelHandlerContext) {
        if let peer = self.peer, !peer.isWritable {
            self.readPending = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { self.peer?.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    /// Reads from here on: a read the HTTP handler had held back is not waited for.
    func startReading() {
        guard let context else { return }
        self.read(context: context)
    }

    private func resumeReading() {
        guard self.readPending, let context else { return }
        self.readPending = false
        context.read()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.idleCheck?.cancel()
        let peer = self.peer
        self.peer = nil
        peer?.closeAfterFlush()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Graceful shutdown: an upgraded connection has no request boundary to wait for.
        if event is ChannelShouldQuiesceEvent {
            context.close(promise: nil)
            return
        }
        // A reload whose lists could not judge this caller now: an upgraded connection has no
        // request boundary to retire at, so it closes (one the lists admit stays).
        if let retire = event as? ProxyRetireEvent, !retire.admitted {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    /// The other end closed: what it sent is flushed, then this one closes too.
    private func closeAfterFlush() {
        self.peer = nil
        guard let context else { return }
        context.writeAndFlush(self.wrapOutboundOut(context.channel.allocator.buffer(capacity: 0)))
            .assumeIsolated()
            .whenComplete { _ in context.close(promise: nil) }
    }

    private func scheduleIdleCheck(at deadline: NIODeadline) {
        guard let context else { return }
        self.idleCheck = context.eventLoop.assumeIsolated().scheduleTask(deadline: deadline) { self.checkIdle() }
    }

    private func checkIdle() {
        guard let context, let idleTimeout = self.idleTimeout else { return }
        let deadline = self.activity.last + idleTimeout
        if context.eventLoop.now >= deadline {
            context.close(promise: nil)
        } else {
            self.scheduleIdleCheck(at: deadline)
        }
    }
}
