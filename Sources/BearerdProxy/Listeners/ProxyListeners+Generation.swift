import BearerdAuth
import BearerdLogging
import BearerdSockets
import Logging
import NIOConcurrencyHelpers
import NIOCore

extension ProxyListeners {
    /// What a new connection is served with: the settings and one upstream pool per event loop,
    /// and the connections it serves, so that a reload can bind them to the next generation.
    final class Generation: Sendable {
        let shared: ProxySettings.Shared
        var settings: ProxySettings {
            _read { yield self.shared.value }
        }
        let pools: [ObjectIdentifier: UpstreamConnectionPool]
        /// The provider's answers connections wait for, over every generation (shutdown waits).
        let calls: ProviderCalls
        /// Request bodies kept for retries, over all of this generation's connections.
        let retryBudget = SharedBudget(limit: ProxySettings.retryBufferTotal)
        private let served = NIOLockedValueBox(Served())

        /// The connections served, and whether a reload retired the generation (then it serves
        /// no new one: a connection still being set up is served by the next).
        private struct Served {
            var connections: [ObjectIdentifier: Connection] = [:]
            var retired = false
        }

        /// A client connection and who its caller is, as far as it was asked.
        struct Connection: Sendable {
            var channel: any Channel
            /// `nil`: unknown (a TCP caller nobody asked about, or one the kernel did not name).
            var caller: Caller?
            var viaTCP: Bool
        }

        init(settings: ProxySettings, group: any EventLoopGroup, calls: ProviderCalls) {
            self.shared = ProxySettings.Shared(settings)
            self.calls = calls
            var pools: [ObjectIdentifier: UpstreamConnectionPool] = [:]
            let budget = SharedBudget(limit: settings.upstream.maxIdleConnections)
            for loop in group.makeIterator() {
                pools[ObjectIdentifier(loop)] = UpstreamConnectionPool(
                    eventLoop: loop,
                    settings: settings,
                    budget: budget
                )
            }
            self.pools = pools
        }

        /// Tracks a client connection until it closes. Returns `false`, tracking nothing, once
        /// the generation is retired: the connection is then the next generation's to serve.
        func serve(_ channel: any Channel, caller: Caller?, viaTCP: Bool) -> Bool {
            let id = ObjectIdentifier(channel)
            let taken = self.served.withLockedValue { served in
                guard !served.retired else { return false }
                served.connections[id] = Connection(channel: channel, caller: caller, viaTCP: viaTCP)
                return true
            }
            guard taken else { return false }
            channel.closeFuture.whenComplete { _ in
                self.served.withLockedValue { _ = $0.connections.removeValue(forKey: id) }
            }
            return true
        }

        /// The handler that serves a connection with this generation's settings on `loop` (`nil`:
        /// the loop has no pool). One handler: it parses the request bytes itself (RequestParser)
        /// and writes the bytes that go out (HeaderRewriter, WireFormat, ProxyFailure). `existing`:
        /// the caller as named when the connection was accepted (its program read then), kept
        /// across a reload; otherwise `caller` is named now.
        func handler(
            viaTCP: Bool,
            caller: Caller?,
            existing: ConnectionCaller? = nil,
            on loop: any EventLoop,
            tokens: any TokenProvider,
            metrics: ProxyMetrics,
            logger: Logger,
            failures: ThrottledLogger
        ) -> ProxyHandler? {
            guard let pool = self.pools[ObjectIdentifier(loop)] else { return nil }
            return ProxyHandler(
                settings: self.shared,
                retryBudget: self.retryBudget,
                viaTCP: viaTCP,
                pool: pool,
                // A `per_caller` session's: this caller's tokens, and only theirs.
                tokens: tokens.needsCaller ? tokens.forCaller(existing?.uid ?? caller?.uid) : tokens,
                calls: self.calls,
                metrics: metrics,
                logger: logger,
                failures: failures,
                caller: existing
                    ?? caller.map {
                        ConnectionCaller(
                            $0,
                            metrics: metrics,
                            readExecutable: self.shared.value.accessLog,
                            now: loop.now
                        )
                    }
            )
        }

        /// Takes over a connection a retired generation served and the reload let stay (busy, or
        /// spliced): the next reload checks it again.
        func adopt(_ connection: Connection) {
            let id = ObjectIdentifier(connection.channel)
            self.served.withLockedValue { $0.connections[id] = connection }
            connection.channel.closeFuture.whenComplete { _ in
                self.served.withLockedValue { _ = $0.connections.removeValue(forKey: id) }
            }
        }

        /// Closes the idle upstream connections and pools no more.
        func close() {
            for pool in self.pools.values { pool.eventLoop.execute { pool.close() } }
        }

        /// A reload made `next` the generation in force: each connection this one serves is
        /// bound to it. A caller `next` does not admit is closed at once, upgraded (spliced)
        /// connections included; every other connection is told to retire (``ProxyRetireEvent``).
        /// Returns once every connection has been dealt with on its event loop.
        func retire(
            for next: Generation,
            tokens: any TokenProvider,
            metrics: ProxyMetrics,
            logger: Logger,
            failures: ThrottledLogger
        ) async {
            self.close()
            let connections = self.served.withLockedValue { served in
                served.retired = true
                return Array(served.connections.values)
            }
            let admission = next.settings.admission
            // Lists that did not change admit whom they admitted: nobody is asked again.
            let recheck = admission != self.settings.admission
            var done: [EventLoopFuture<Void>] = []
            for connection in connections {
                let channel = connection.channel
                let decided = channel.eventLoop.flatSubmit {
                    let verdict =
                        recheck
                        ? Self.verdict(connection, admission)
                        : channel.eventLoop.makeSucceededFuture((.admitted, connection.caller))
                    return verdict.map { verdict, caller in
                        if verdict != .refused {
                            // Admitted, or not known for sure (a socket closing, groups that did
                            // not come): an idle connection takes the new settings, a busy one
                            // retires once its request in flight finished.
                            var adopted = connection
                            adopted.caller = caller
                            next.adopt(adopted)
                            let successor: @Sendable (Bool, ConnectionCaller?, any EventLoop) -> ProxyHandler? = {
                                viaTCP,
                                existing,
                                loop in
                                guard verdict == .admitted else { return nil }
                                return next.handler(
                                    viaTCP: viaTCP,
                                    caller: caller,
                                    existing: existing,
                                    on: loop,
                                    tokens: tokens,
                                    metrics: metrics,
                                    logger: logger,
                                    failures: failures
                                )
                            }
                            channel.pipeline.fireUserInboundEventTriggered(
                                ProxyRetireEvent(admitted: verdict == .admitted, successor: successor)
                            )
                        } else {
                            metrics.callerRefused()
                            CallerRefusals.log(
                                connection.caller,
                                viaTCP: connection.viaTCP,
                                failures: failures,
                                now: channel.eventLoop.now,
                                afterReload: true
                            )
                            channel.close(promise: nil)
                        }
                    }
                }
                done.append(decided)
            }
            guard let loop = connections.first?.channel.eventLoop else { return }
            try? await EventLoopFuture.andAllComplete(done, on: loop).get()
        }

        /// What the new lists say of a connection already open.
        enum Verdict: Equatable {
            case admitted
            case refused
            /// The caller or its groups could not be had now: not a reason to cut a request.
            case unknown
        }

        /// Whether `admission` lets the connection's caller in; a caller not known yet is asked
        /// of the kernel now (and its groups, when they matter), once. On the channel's loop.
        static func verdict(
            _ connection: Connection,
            _ admission: CallerAdmission
        ) -> EventLoopFuture<(Verdict, Caller?)> {
            let loop = connection.channel.eventLoop
            guard admission.needsCaller else { return loop.makeSucceededFuture((.admitted, connection.caller)) }
            let caller: EventLoopFuture<Caller?> =
                if let known = connection.caller {
                    loop.makeSucceededFuture(known)
                } else if connection.viaTCP {
                    Caller.ofTCP(connection.channel)
                } else {
                    loop.makeSucceededFuture(nil)
                }
            return caller.flatMap { caller in
                guard let caller else {
                    // A peer off this host has no local owner: never admitted by the lists.
                    let remote = connection.channel.remoteAddress.map { !$0.isLoopbackPeer } ?? false
                    return loop.makeSucceededFuture((connection.caller == nil && !remote ? .unknown : .refused, nil))
                }
                guard admission.needsGroups(caller) else {
                    return loop.makeSucceededFuture((admission.admits(caller) ? .admitted : .refused, caller))
                }
                return CallerGroupsLookup.lookUp(caller.uid, on: loop).map {
                    if admission.admits(caller) { return (.admitted, caller) }
                    // Refused by uid for sure; by group only when the groups are known.
                    return (admission.needsGroups(caller) ? .unknown : .refused, caller)
                }
            }
        }
    }
}
