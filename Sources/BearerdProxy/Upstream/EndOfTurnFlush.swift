import NIOCore

/// What one turn of an event loop wrote, flushed together at the turn's end: first the responses
/// that ended in the turn, to their clients, then the requests written to the upstream.
///
/// Under load one turn reads many upstream responses and many new requests. Flushing each as it
/// is written interleaves the two kinds of write; flushing them at the end writes each kind in
/// one run, and the upstream then gets its requests together and serves them in one wake-up
/// instead of one each (the figures, dated, are in docs/performance.md). Responses first: the
/// other order made the upstream's one-request wake-ups more frequent, not less.
/// Nothing waits past the end of its own turn, and a response whose body goes on streaming is
/// flushed by each upstream read as before.
///
/// One per event loop, used on that loop only.
final class EndOfTurnFlush: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private var clients: [ChannelHandlerContext] = []
    private var upstreams: [UpstreamConnection] = []
    /// ``flushAll()`` as one closure made once, so a turn does not allocate one.
    private var task: (@Sendable () -> Void)?

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
        self.task = { [weak self] in self?.flushAll() }
    }

    /// Flushes the client connection of `context` at the end of this turn.
    func client(_ context: ChannelHandlerContext) {
        self.eventLoop.assertInEventLoop()
        self.scheduleOnce()
        self.clients.append(context)
    }

    /// Flushes `connection` at the end of this turn.
    func upstream(_ connection: UpstreamConnection) {
        self.eventLoop.assertInEventLoop()
        self.scheduleOnce()
        self.upstreams.append(connection)
    }

    private func scheduleOnce() {
        if self.clients.isEmpty && self.upstreams.isEmpty, let task = self.task {
            self.eventLoop.execute(task)
        }
    }

    /// Flushes by index and empties the lists in place: a copy of them would cost an allocation
    /// per turn. A flush can end in a callback that adds to either list (a failed write closes
    /// a connection); the loop runs until both are done, so nothing added is dropped unflushed.
    private func flushAll() {
        var client = 0
        var upstream = 0
        while client < self.clients.count || upstream < self.upstreams.count {
            while client < self.clients.count {
                self.clients[client].flush()
                client += 1
            }
            while upstream < self.upstreams.count {
                self.upstreams[upstream].flush()
                upstream += 1
            }
        }
        self.clients.removeAll(keepingCapacity: true)
        self.upstreams.removeAll(keepingCapacity: true)
    }
}
