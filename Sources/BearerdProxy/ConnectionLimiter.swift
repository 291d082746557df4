import Logging
import NIOConcurrencyHelpers
import NIOCore

/// `proxy.max_connections`: the open client connections over all listeners.
///
/// A listener takes a slot before it accepts (see ``AcceptGate``) and the accepted connection
/// keeps it until it closes, so the count never goes over the limit. At the limit, listeners stop
/// accepting and the kernel queues new connections until a slot frees: they wait rather than
/// being refused.
final class ConnectionLimiter: Sendable {
    private struct State {
        var limit: Int
        /// Slots held by open connections and by listeners about to accept.
        var taken = 0
        /// Listeners waiting for a slot.
        var waiting: [@Sendable () -> Void] = []
        var full = false
    }

    private let state: NIOLockedValueBox<State>
    private let metrics: ProxyMetrics
    private let logger: Logger

    init(limit: Int, metrics: ProxyMetrics, logger: Logger) {
        self.state = NIOLockedValueBox(State(limit: limit))
        self.metrics = metrics
        self.logger = logger
    }

    /// Takes a slot, or returns `false` and runs `whenFree` (if any) once one may be free.
    func take(orWhenFree whenFree: (@Sendable () -> Void)? = nil) -> Bool {
        let (taken, becameFull) = self.state.withLockedValue { state -> (Bool, Bool) in
            if state.taken < state.limit {
                state.taken += 1
                return (true, false)
            }
            if let whenFree { state.waiting.append(whenFree) }
            defer { state.full = true }
            return (false, !state.full)
        }
        if becameFull {
            self.logger.warning(
                "proxy.max_connections reached: new connections wait until one closes",
                metadata: ["limit": "\(self.state.withLockedValue { $0.limit })"]
            )
        }
        return taken
    }

    /// A slot taken by a listener now belongs to the connection it accepted, until it closes.
    func hand(to channel: any Channel) {
        self.metrics.connectionOpened()
        channel.closeFuture.whenComplete { _ in
            self.metrics.connectionClosed()
            self.give()
        }
    }

    /// Frees a slot.
    func give() {
        let wake = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.taken -= 1
            return Self.wakeIfFree(&state)
        }
        for resume in wake { resume() }
    }

    /// A reload's new limit; lowering it closes nothing, it only holds off accepting.
    func setLimit(_ limit: Int) {
        let wake = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.limit = limit
            return Self.wakeIfFree(&state)
        }
        for resume in wake { resume() }
    }

    private static func wakeIfFree(_ state: inout State) -> [@Sendable () -> Void] {
        guard state.taken < state.limit, !state.waiting.isEmpty else { return [] }
        defer {
            state.waiting = []
            state.full = false
        }
        return state.waiting
    }
}

/// On each listening channel: accepts only while it holds a slot of the ``ConnectionLimiter``,
/// one connection per read (`maxMessagesPerRead` 1 on the listener), and holds the read while
/// there is none.
final class AcceptGate: ChannelDuplexHandler {
    typealias InboundIn = any Channel
    typealias InboundOut = any Channel
    typealias OutboundIn = Never

    private let limiter: ConnectionLimiter
    private var context: ChannelHandlerContext?
    private var holdsSlot = false
    private var readPending = false

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.returnSlot()
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.returnSlot()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let child = self.unwrapInboundIn(data)
        if self.holdsSlot {
            self.holdsSlot = false
            self.limiter.hand(to: child)
        } else if self.limiter.take() {
            // Accepted without a read of ours (cannot happen with one message per read; never trust it).
            self.limiter.hand(to: child)
        } else {
            child.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    func read(context: ChannelHandlerContext) {
        if self.holdsSlot {
            context.read()
            return
        }
        let loop = context.eventLoop
        let gate = NIOLoopBound(self, eventLoop: loop)
        if self.limiter.take(orWhenFree: { loop.execute { gate.value.resume() } }) {
            self.holdsSlot = true
            context.read()
        } else {
            self.readPending = true
        }
    }

    private func resume() {
        guard self.readPending, let context else { return }
        self.readPending = false
        self.read(context: context)
    }

    private func returnSlot() {
        if self.holdsSlot {
            self.holdsSlot = false
            self.limiter.give()
        }
    }
}
