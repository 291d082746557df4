import BearerdLogging
import Logging
import NIOConcurrencyHelpers
import NIOCore

/// `proxy.max_connections`: the open client connections over all listeners.
///
/// A listener takes a slot before it accepts (see ``AcceptGate``) and the accepted connection
/// keeps it until it closes, so the count never goes over the limit. At the limit, listeners stop
/// accepting and the kernel queues new connections until a slot frees: they wait rather than
/// being refused. Each listener may hold at most its share (the limit divided by the number of
/// listeners), so one TCP caller opening connections cannot crowd out the unix-socket callers.
final class ConnectionLimiter: Sendable {
    private struct State {
        var limit: Int
        /// Slots held by open connections and by listeners about to accept.
        var taken = 0
        /// Slots held per listener (``AcceptGate``).
        var perListener: [ObjectIdentifier: Int] = [:]

        var share: Int { max(1, self.limit / max(1, self.perListener.count)) }

        func hasRoom(for listener: ObjectIdentifier) -> Bool {
            self.taken < self.limit && self.perListener[listener, default: 0] < self.share
        }
        /// Listeners waiting for a slot.
        var waiting: [@Sendable () -> Void] = []
        var full = false
        /// `proxy.at_connection_limit: refuse`: accept at the limit and answer 503.
        var refuse = false
        /// Connections accepted over the limit, to be answered 503 by their initializer.
        var toRefuse: Set<ObjectIdentifier> = []
    }

    private let state: NIOLockedValueBox<State>
    private let metrics: ProxyMetrics
    /// At the limit, every connection that closes lets one more in and the limit is reached
    /// again: the warning goes through the throttle, not once per connection.
    private let failures: ThrottledLogger

    init(limit: Int, metrics: ProxyMetrics, failures: ThrottledLogger) {
        self.state = NIOLockedValueBox(State(limit: limit))
        self.metrics = metrics
        self.failures = failures
    }

    /// A listener starts or stops taking slots; the shares follow the number of listeners.
    func addListener(_ listener: ObjectIdentifier) {
        self.state.withLockedValue { state in
            if state.perListener[listener] == nil { state.perListener[listener] = 0 }
        }
    }

    func removeListener(_ listener: ObjectIdentifier) {
        let wake = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.perListener.removeValue(forKey: listener)
            return Self.wakeIfFree(&state)
        }
        for resume in wake { resume() }
    }

    /// Takes a slot for `listener`, or returns `false` and runs `whenFree` (if any) once one may
    /// be free.
    func take(for listener: ObjectIdentifier, orWhenFree whenFree: (@Sendable () -> Void)? = nil) -> Bool {
        let (taken, becameFull) = self.state.withLockedValue { state -> (Bool, Bool) in
            if state.hasRoom(for: listener) {
                state.taken += 1
                state.perListener[listener, default: 0] += 1
                return (true, false)
            }
            if let whenFree { state.waiting.append(whenFree) }
            defer { state.full = true }
            return (false, !state.full)
        }
        if becameFull {
            self.failures.warning(
                kind: "max_connections",
                "proxy.max_connections reached: new connections wait until one closes",
                metadata: ["limit": "\(self.state.withLockedValue { $0.limit })"]
            )
        }
        return taken
    }

    /// A slot taken by a listener now belongs to the connection it accepted, until it closes.
    func hand(to channel: any Channel, from listener: ObjectIdentifier) {
        self.metrics.connectionOpened()
        channel.closeFuture.whenComplete { _ in
            self.metrics.connectionClosed()
            self.give(from: listener)
        }
    }

    /// Frees a slot of `listener`.
    func give(from listener: ObjectIdentifier) {
        let wake = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.taken -= 1
            if let held = state.perListener[listener] { state.perListener[listener] = max(0, held - 1) }
            return Self.wakeIfFree(&state)
        }
        for resume in wake { resume() }
    }

    /// The limit in force.
    var limit: Int { self.state.withLockedValue { $0.limit } }

    /// Whether every slot is taken now.
    var isFull: Bool { self.state.withLockedValue { $0.taken >= $0.limit } }

    /// Whether connections over the limit are accepted and answered 503.
    var refuses: Bool { self.state.withLockedValue { $0.refuse } }

    /// Marks a connection accepted over the limit; its initializer answers it 503.
    func markForRefusal(_ channel: any Channel) {
        self.state.withLockedValue { _ = $0.toRefuse.insert(ObjectIdentifier(channel)) }
        self.metrics.connectionRefused()
    }

    /// Whether `channel` was accepted over the limit (asked once, by its initializer).
    func takeRefusal(_ channel: any Channel) -> Bool {
        self.state.withLockedValue { $0.toRefuse.remove(ObjectIdentifier(channel)) != nil }
    }

    /// A reload's new limit and behaviour at it; lowering the limit closes nothing, it only holds
    /// off accepting.
    func setLimit(_ limit: Int, refuse: Bool = false) {
        let wake = self.state.withLockedValue { state -> [@Sendable () -> Void] in
            state.refuse = refuse
            state.limit = limit
            return Self.wakeIfFree(&state)
        }
        for resume in wake { resume() }
    }

    private static func wakeIfFree(_ state: inout State) -> [@Sendable () -> Void] {
        // Every waiter looks again (each checks its own share); those still without room wait on.
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
    /// What the limiter calls when a slot frees, made once: a closure made in each `read` would
    /// be an allocation per connection accepted. (It holds the gate until `handlerRemoved`.)
    private var whenFree: (@Sendable () -> Void)?

    init(limiter: ConnectionLimiter) {
        self.limiter = limiter
    }

    private var id: ObjectIdentifier { ObjectIdentifier(self) }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let loop = context.eventLoop
        let gate = NIOLoopBound(self, eventLoop: loop)
        self.whenFree = { loop.execute { gate.value.resume() } }
        self.limiter.addListener(self.id)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        self.whenFree = nil
        self.returnSlot()
        self.limiter.removeListener(self.id)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.returnSlot()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let child = self.unwrapInboundIn(data)
        if self.holdsSlot {
            self.holdsSlot = false
            self.limiter.hand(to: child, from: self.id)
        } else if self.limiter.take(for: self.id) {
            // Accepted without a read of ours (cannot happen with one message per read; never trust it).
            self.limiter.hand(to: child, from: self.id)
        } else if self.limiter.refuses {
            self.limiter.markForRefusal(child)
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
        if self.limiter.refuses {
            // Over the limit the connection is accepted all the same, and answered 503.
            self.holdsSlot = self.limiter.take(for: self.id)
            context.read()
        } else if self.limiter.take(for: self.id, orWhenFree: self.whenFree) {
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
            self.limiter.give(from: self.id)
        }
    }
}
