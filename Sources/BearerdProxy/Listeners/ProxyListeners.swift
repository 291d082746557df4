import BearerdAuth
import BearerdLogging
import BearerdSockets
import BearerdWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOHTTP1
import NIOPosix

/// The bound listening sockets of a running proxy, what new connections are served with, and
/// their graceful shutdown. A reload swaps the settings and upstream pools, binds or closes
/// listeners, and binds the connections already open: callers the new lists no longer admit are
/// closed, the rest close as soon as their exchange in flight ends (idle ones at once), so no
/// request is forwarded under the old settings once the reload returns
/// (``ProxyListeners/Generation/retire(for:)``).
package final class ProxyListeners: Sendable {
    /// One listening socket.
    struct Listener: Sendable {
        /// `nil` for a socket systemd passed.
        var address: ListenAddress?
        var bound: SocketAddress
        var channel: any Channel
        var quiescer: ServerQuiescingHelper
        /// The socket file bearerd created (removed at shutdown).
        var unixPath: String?
    }

    struct State {
        var listeners: [Listener] {
            didSet { self.addresses = self.listeners.map(\.bound) }
        }
        /// What was last listened on; kept after shutdown, for whoever asks.
        var addresses: [SocketAddress] = []
        var generation: Generation
        /// Generations replaced by a reload, kept until shutdown: their quiescers still track
        /// connections, and the last of their pools' connections close as exchanges end.
        var retired: [Listener] = []
    }

    let state: NIOLockedValueBox<State>
    let tokens: any TokenProvider
    /// The provider's answers connections wait for, over every generation.
    var calls: ProviderCalls { self.state.withLockedValue { $0.generation.calls } }
    let metrics: ProxyMetrics
    /// `proxy.max_connections`, over every listener and generation.
    let limiter: ConnectionLimiter
    let group: any EventLoopGroup
    let logger: Logger
    /// The lines clients, the upstream or the token server can cause at request rate, over
    /// every connection, listener and generation: once per kind, then summarised.
    let failures: ThrottledLogger
    /// Counts the clients that wait while `proxy.max_connections` is reached.
    private let waitingClients = NIOLockedValueBox<WaitingClients?>(nil)

    /// The addresses actually bound (a port 0 in the config shows its real port here).
    package var addresses: [SocketAddress] { self.state.withLockedValue { $0.addresses } }

    private init(generation: Generation, tokens: any TokenProvider, group: any EventLoopGroup, logger: Logger) {
        self.state = NIOLockedValueBox(State(listeners: [], generation: generation))
        let metrics = ProxyMetrics(session: generation.settings.session)
        self.metrics = metrics
        let failures = ThrottledLogger(logger: logger, eventLoop: group.next())
        self.failures = failures
        self.limiter = ConnectionLimiter(
            limit: generation.settings.proxy.limits.maxConnections,
            metrics: metrics,
            failures: failures
        )
        self.limiter.setLimit(
            generation.settings.proxy.limits.maxConnections,
            refuse: generation.settings.proxy.limits.refuseAtConnectionLimit
        )
        self.tokens = tokens
        self.group = group
        self.logger = logger
    }

    /// Binds every address of `settings.listeners` — or, under socket activation, serves the
    /// listening sockets systemd `passed` instead — and starts serving.
    /// - Throws: ``ProxyError`` or the bind error; whatever was bound is closed again.
    package static func bind(
        passed: [Int32] = [],
        settings: ProxySettings,
        tokens: any TokenProvider,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> ProxyListeners {
        let (listen, allowRemote) = (settings.listeners.listen, settings.listeners.allowRemote)
        let (socketMode, socketGroup) = (settings.listeners.socketMode, settings.listeners.socketGroup)
        let listeners = ProxyListeners(
            generation: Generation(settings: settings, group: group, calls: ProviderCalls()),
            tokens: tokens,
            group: group,
            logger: logger
        )
        var bound: [Listener] = []
        do {
            for descriptor in passed {
                let quiesce = ServerQuiescingHelper(group: group)
                let channel = try await listeners.bootstrap(tcp: Self.isInternet(descriptor), quiesce: quiesce)
                    .withBoundSocket(descriptor).get()
                guard let local = channel.localAddress else {
                    try? await channel.close()
                    throw ProxyError.setup(
                        "a socket systemd passed has no address; check bearerd.socket's ListenStream="
                    )
                }
                // systemd's socket unit chose the address: it gets the same checks as `listen`.
                if let ip = local.ipAddress, !ListenAddress.tcp(host: ip, port: 0).isLoopback {
                    if !allowRemote {
                        try? await channel.close()
                        throw ProxyError.setup(
                            "the socket systemd passed listens on \(local.bearerdDescription), not a loopback address: anyone who can reach it could use the token; use ListenStream=127.0.0.1:PORT in bearerd.socket, or set allow_remote: true"
                        )
                    }
                    if !settings.admission.anyUser {
                        try? await channel.close()
                        throw ProxyError.setup(
                            "the socket systemd passed listens on \(local.bearerdDescription), not a loopback address, and its callers on other hosts have no local uid for socket_allow_uids/socket_allow_gids: set socket_allow_any_user: true as well"
                        )
                    }
                }
                bound.append(Listener(address: nil, bound: local, channel: channel, quiescer: quiesce))
            }
            for address in passed.isEmpty ? listen : [] {
                bound.append(try await listeners.bind(address, socketMode: socketMode, socketGroup: socketGroup))
            }
        } catch {
            await Self.close(bound)
            throw error
        }
        listeners.state.withLockedValue { $0.listeners = bound }
        let state = listeners.state
        listeners.waitingClients.withLockedValue {
            $0 = WaitingClients(
                limiter: listeners.limiter,
                metrics: listeners.metrics,
                group: group,
                logger: logger,
                listeners: {
                    state.withLockedValue { $0.listeners.filter { $0.bound.ipAddress != nil }.map(\.channel) }
                }
            )
        }
        return listeners
    }

    /// Serves new connections with `settings` (a new upstream, timeouts, limits) and on its
    /// listen addresses: new ones are bound first, then the ones no longer listed stop accepting
    /// and drain. A bind that fails changes nothing. Sockets systemd passed are kept as they are.
    package func reload(settings: ProxySettings) async throws {
        let listen = settings.listeners.listen
        let (socketMode, socketGroup) = (settings.listeners.socketMode, settings.listeners.socketGroup)
        let (current, running) = self.state.withLockedValue { ($0.listeners, $0.generation.settings) }
        // The DPoP key and nonce are the session's: the running ones go on (auth.dpop is restart-only).
        var settings = settings
        settings.dpop = running.dpop
        // So is the tracer: its exporter runs for the daemon's life (tracing.* are restart-only).
        settings.tracing = running.tracing
        // And the access lines' writer (log.access_file is restart-only); its file is opened
        // again, so that logrotate can have moved it away.
        settings.accessLines = running.accessLines
        settings.accessLines?.reopen()
        let activated = current.contains { $0.address == nil }
        var added: [Listener] = []
        if !activated {
            do {
                for address in listen where !current.contains(where: { $0.address == address }) {
                    added.append(try await self.bind(address, socketMode: socketMode, socketGroup: socketGroup))
                }
            } catch {
                await Self.close(added)
                throw error
            }
        }
        let next = Generation(settings: settings, group: self.group, calls: self.calls)
        let (removed, old) = self.state.withLockedValue { state -> ([Listener], Generation) in
            let removed =
                activated ? [] : state.listeners.filter { listener in !listen.contains { $0 == listener.address } }
            state.listeners = state.listeners.filter { listener in !removed.contains { $0.channel === listener.channel }
            }
            state.listeners += added
            state.retired += removed
            let old = state.generation
            state.generation = next
            return (removed, old)
        }
        // The new settings are live once every open connection knows: each is closed, or will
        // close after the exchange it had begun (`bearerd reload` answers only then).
        await old.retire(
            for: next,
            tokens: self.tokens,
            metrics: self.metrics,
            logger: self.logger,
            failures: self.failures
        )
        self.limiter.setLimit(
            settings.proxy.limits.maxConnections,
            refuse: settings.proxy.limits.refuseAtConnectionLimit
        )
        for listener in removed {
            if let path = listener.unixPath { UnixSocketFile.remove(path) }
            listener.quiescer.initiateShutdown(promise: nil)
        }
    }

    private func bind(_ address: ListenAddress, socketMode: UInt32, socketGroup: UInt32?) async throws -> Listener {
        let quiesce = ServerQuiescingHelper(group: self.group)
        switch address {
        case .tcp(let host, let port):
            let channel: any Channel
            do {
                channel = try await self.bootstrap(tcp: true, quiesce: quiesce).bind(host: host, port: port).get()
            } catch {
                throw SocketSetupError.bind(error, key: "listen", address: "\(address)")
            }
            return Listener(address: address, bound: channel.localAddress!, channel: channel, quiescer: quiesce)
        case .unix(let path):
            try UnixSocketFile.checkReplaceable(path)
            let temporary = UnixSocketFile.temporaryPath(for: path)
            let channel = try await self.bootstrap(tcp: false, quiesce: quiesce)
                .bind(to: try UnixSocketFile.address(temporary)).get()
            do {
                try UnixSocketFile.publish(temporary: temporary, final: path, mode: socketMode, group: socketGroup)
            } catch {
                try? await channel.close()
                UnixSocketFile.remove(temporary)
                throw error
            }
            return Listener(
                address: address,
                bound: try UnixSocketFile.address(path),
                channel: channel,
                quiescer: quiesce,
                unixPath: path
            )
        }
    }

    private static func close(_ listeners: [Listener]) async {
        for listener in listeners {
            try? await listener.channel.close()
            if let path = listener.unixPath { UnixSocketFile.remove(path) }
        }
    }

    /// Whether a passed socket is TCP (rather than a unix socket).
    private static func isInternet(_ descriptor: Int32) -> Bool {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let ok = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) == 0 }
        }
        return ok && (Int32(address.ss_family) == AF_INET || Int32(address.ss_family) == AF_INET6)
    }

    /// Stops accepting, lets in-flight requests finish for up to `grace`, then returns; the
    /// connections still open are closed when the event loop group shuts down.
    /// - Returns: whether every connection finished within `grace`.
    @discardableResult
    package func shutdown(grace: Duration) async -> Bool {
        self.waitingClients.withLockedValue { $0?.stop() }
        let (listeners, retired, generation) = self.state.withLockedValue { ($0.listeners, $0.retired, $0.generation) }
        for path in listeners.compactMap(\.unixPath) { UnixSocketFile.remove(path) }
        generation.close()
        let loop = self.group.next()
        let each = (listeners + retired).map { listener in
            let promise = loop.makePromise(of: Void.self)
            listener.quiescer.initiateShutdown(promise: promise)
            return promise.futureResult
        }
        let drained = EventLoopFuture.andAllComplete(each, on: loop)
        let outcome = loop.makePromise(of: Bool.self)
        let timer = loop.scheduleTask(in: TimeAmount(grace)) { outcome.succeed(false) }
        drained.whenComplete { _ in
            timer.cancel()
            outcome.succeed(true)
        }
        let finished = (try? await outcome.futureResult.get()) ?? false
        // The helpers go while the event loops still run: their deinit completes a promise there.
        self.state.withLockedValue { state in
            let addresses = state.addresses
            state.listeners.removeAll()
            state.addresses = addresses
            state.retired.removeAll()
        }
        if !finished {
            self.logger.warning(
                "requests still in flight after shutdown_grace; closing their connections",
                metadata: ["shutdown_grace": "\(grace)"]
            )
        }
        // The provider's answers still to come complete promises on the event loops, which must
        // still run then: they are cancelled (a connection still open past shutdown_grace gets
        // its request's failure) and awaited.
        if !(await self.calls.drain(within: .seconds(2))) {
            self.logger.debug("token provider calls still running at shutdown")
        }
        // What the last window counted, not left unsaid when bearerd stops.
        self.failures.flush()
        return finished
    }
}
