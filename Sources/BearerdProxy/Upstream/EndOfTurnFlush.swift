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
/// Then the progress checks of the responses whose head went out in the turn: most responses
/// end in the read that brought their head, and a check armed at once would be a scheduled
/// task made and cancelled for each of them.
///
/// One per event loop, used on that loop only.
final class EndOfTurnFlush: @unchecked Sendable {
    private let eventLoop: any EventLoop
    private var clients: [ChannelHandlerContext] = []
    private var upstreams: [UpstreamConnection] = []
    private var checks: [ProxyHandler] = []
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

    /// Arms `handler`'s response progress check at the end of this turn, if still needed.
    func check(_ handler: ProxyHandler) {
        self.eventLoop.assertInEventLoop()
        self.scheduleOnce()
        self.checks.append(handler)
    }

    private func scheduleOnce() {
        if self.clients.isEmpty && self.upstreams.isEmpty && self.checks.isEmpty, let task = self.task {
            self.eventLoop.execute(task)
        }
    }

    /// Flushes by index and empties the lists in place: a copy of them would cost an allocation
    /// per turn. A flush can end in a callback that adds to any list (a failed write closes a
    /// connection); the loop runs until all are done, so nothing added is dropped.
    private func flushAll() {
        var client = 0
        var upstream = 0
        var check = 0
        while client < self.clients.count || upstream < self.upstreams.count || check < self.checks.count {
            while client < self.clients.count {
                self.clients[client].flush()
                client += 1
            }
            while upstream < self.upstreams.count {
                self.upstreams[upstream].flush()
                upstream += 1
            }
            while check < self.checks.count {
                self.checks[check].armProgressCheck()
                check += 1
            }
        }
        self.clients.removeAll(keepingCapacity: true)
        self.upstreams.removeAll(keepingCapacity: true)
        self.checks.removeAll(keepingCapacity: true)
    }
}
