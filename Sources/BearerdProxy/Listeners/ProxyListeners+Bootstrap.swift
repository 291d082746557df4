import BearerdAuth
import BearerdLogging
import BearerdSockets
import BearerdWire
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOExtras
import NIOPosix

extension ProxyListeners {
    /// The bootstrap of one listener. A connection to a loopback address from a peer that is not
    /// on the loopback network (a host or container let in by `route_localnet`, CVE-2020-8558:
    /// nothing else sends such packets) is closed at accept, whatever else is configured.
    func bootstrap(tcp: Bool, quiesce: ServerQuiescingHelper) -> ServerBootstrap {
        let admit = Admit(
            state: self.state,
            tokens: self.tokens,
            metrics: self.metrics,
            logger: self.logger,
            failures: self.failures,
            viaTCP: tcp
        )
        let limiter = self.limiter
        var bootstrap = ServerBootstrap(group: self.group)
            .serverChannelOption(.backlog, value: 1024)
            // One accept per read, so that the gate's slot covers each connection accepted.
            .serverChannelOption(.maxMessagesPerRead, value: 1)
            .serverChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(AcceptGate(limiter: limiter))
                    try sync.addHandler(quiesce.makeServerChannelHandler(channel: channel))
                }
            }
            // No child channel options: NIO applies each through a chain of futures, and each
            // TCP_NODELAY with a getsockname(2) and a setsockopt(2), on every connection
            // accepted. ServerBootstrap sets TCP_NODELAY on the listener, which accepted sockets
            // inherit on Linux (`AcceptedSocketTests`); the read batch is set in place (`serve`).
            .childChannelInitializer { channel in
                if limiter.takeRefusal(channel) {
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(LimitRefusalHandler())
                    }
                }
                if tcp, let local = channel.localAddress, local.isLoopbackPeer, let peer = channel.remoteAddress,
                    !peer.isLoopbackPeer
                {
                    admit.metrics.callerRefused()
                    CallerRefusals.logNotLoopback(peer, failures: admit.failures, now: channel.eventLoop.now)
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                return admit.serve(channel, caller: nil, asked: [])
            }
        if tcp {
            bootstrap = bootstrap.serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        }
        return bootstrap
    }

    /// What was asked of the kernel and the account database about a new connection's caller:
    /// each is asked at most once, whatever came of it (a lookup that gave up decides as "not
    /// listed"), so the decision cannot loop.
    struct Asked: OptionSet, Sendable {
        let rawValue: UInt8
        static let caller = Asked(rawValue: 1)
        static let groups = Asked(rawValue: 2)
    }

    /// Admits a new connection under the generation in force, and serves it.
    struct Admit: Sendable {
        let state: NIOLockedValueBox<State>
        let tokens: any TokenProvider
        let metrics: ProxyMetrics
        let logger: Logger
        let failures: ThrottledLogger
        let viaTCP: Bool

        /// Asks who the caller is when something needs it (the lists, the access line; on a unix
        /// socket always, `SO_PEERCRED` costs nothing), and its groups when they matter; closes a
        /// caller the lists do not admit before a byte is read; else serves it with the
        /// generation in force, which a reload during the asking may have replaced: the decision
        /// is then made again under the new one.
        func serve(_ channel: any Channel, caller: Caller?, asked: Asked) -> EventLoopFuture<Void> {
            var (caller, asked) = (caller, asked)
            while true {
                let generation = self.state.withLockedValue { $0.generation }
                let admission = generation.settings.admission
                if !asked.contains(.caller)
                    && (!self.viaTCP || admission.needsCaller || generation.settings.accessLog
                        || self.tokens.needsCaller)
                {
                    asked.insert(.caller)
                    // The owner of a TCP client's socket: one netlink request on this event loop,
                    // answered in place (no future to hop through).
                    guard self.viaTCP else {
                        return PeerCredentials.caller(channel).flatMap { [asked] in
                            self.serve(channel, caller: $0, asked: asked)
                        }
                    }
                    caller = Caller.ofTCPNow(channel)
                    continue
                }
                if !asked.contains(.groups), let caller, admission.needsGroups(caller) {
                    // Its account's groups, off the loop; once: a lookup that gave up (slow NSS,
                    // too many pending) leaves them unknown, and the caller not listed by group.
                    return CallerGroupsLookup.lookUp(caller.uid, on: channel.eventLoop).flatMap { [asked] in
                        self.serve(channel, caller: caller, asked: asked.union(.groups))
                    }
                }
                guard admission.admits(caller) else {
                    self.metrics.callerRefused()
                    CallerRefusals.log(caller, viaTCP: self.viaTCP, failures: self.failures, now: channel.eventLoop.now)
                    channel.close(promise: nil)
                    return channel.eventLoop.makeSucceededVoidFuture()
                }
                // A reload retired the generation meanwhile: the new one decides.
                guard generation.serve(channel, caller: caller, viaTCP: self.viaTCP) else { continue }
                return channel.eventLoop.makeCompletedFuture { [caller] in
                    guard
                        let handler = generation.handler(
                            viaTCP: self.viaTCP,
                            caller: caller,
                            on: channel.eventLoop,
                            tokens: self.tokens,
                            metrics: self.metrics,
                            logger: self.logger,
                            failures: self.failures
                        )
                    else { throw ProxyError.setup("no upstream pool for this event loop") }
                    try channel.syncOptions?.setOption(.maxMessagesPerRead, value: 8)
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        }
    }
}
