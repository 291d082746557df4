import BearerdAuth
import Logging
import NIOCore
import NIOHTTP1

/// Kept-alive connections to the upstream, one pool per event loop, used only on that loop, so a
/// client connection and the upstream connection serving it share a thread and never hop. How
/// many are kept idle over all loops is bounded by one ``SharedBudget``.
final class UpstreamConnectionPool: @unchecked Sendable {
    /// What ``acquire()`` gives: a pooled connection now, or a new one being opened.
    enum Lease {
        case ready(UpstreamConnection)
        case connecting(EventLoopFuture<UpstreamConnection>)
    }

    let eventLoop: any EventLoop
    private let settings: ProxySettings
    /// Shared by every loop's pool: each idle connection holds one slot.
    private let budget: SharedBudget
    private var idle: [UpstreamConnection] = []
    /// The loop's writes to flush at the end of its turn: requests to the upstream, and the
    /// responses of the client connections this pool serves.
    let endOfTurn: EndOfTurnFlush
    private var isClosed = false
    /// Opens new connections (``TCPUpstreamConnector`` unless a test gives another).
    private let connector: any UpstreamConnector

    init(
        eventLoop: any EventLoop,
        settings: ProxySettings,
        budget: SharedBudget,
        connector: (any UpstreamConnector)? = nil
    ) {
        self.eventLoop = eventLoop
        self.settings = settings
        self.budget = budget
        self.connector = connector ?? TCPUpstreamConnector(settings: settings)
        self.endOfTurn = EndOfTurnFlush(eventLoop: eventLoop)
    }

    /// The most recently used open connection, or a new one (always new when `fresh`).
    func acquire(fresh: Bool = false) -> Lease {
        self.eventLoop.assertInEventLoop()
        while !fresh, let connection = self.idle.popLast() {
            self.budget.give()
            if connection.isOpen { return .ready(connection) }
        }
        return .connecting(self.connector.connect(for: self))
    }

    /// Gives a connection back after an exchange: pooled if it can carry another request.
    func release(_ connection: UpstreamConnection, reusable: Bool) {
        self.eventLoop.assertInEventLoop()
        guard reusable, connection.isOpen, !self.isClosed, self.budget.take() else {
            connection.close()
            return
        }
        connection.returnToIdle(idleTimeout: TimeAmount(self.settings.upstream.idleTimeout))
        self.idle.append(connection)
    }

    /// Forgets a connection that closed.
    func remove(_ connection: UpstreamConnection) {
        let before = self.idle.count
        self.idle.removeAll { $0 === connection }
        self.budget.give(before - self.idle.count)
    }

    /// Closes the idle connections and pools no more; leased ones close when their exchange ends.
    func close() {
        self.eventLoop.assertInEventLoop()
        self.isClosed = true
        let connections = self.idle
        self.idle.removeAll()
        self.budget.give(connections.count)
        for connection in connections { connection.close() }
    }
}
