import BearerdAdmin
import BearerdConfig
import BearerdFleet
import BearerdProxy
import BearerdSockets
import BearerdStore
import BearerdSystemd
import BearerdTokens
import Logging
import NIOCore
import ServiceLifecycle
import Tracing

/// One session of the daemon: its token engine, its listeners and the services that run them.
/// A config without `sessions:` has one, `default`; each of `sessions:` has its own store, token
/// source, upstream and listeners, and shares the event loops, the admin socket and the logs.
struct DaemonSession {
    let name: String
    let engine: TokenEngine
    let proxy: ProxyControl
    /// What the admin socket calls for this session.
    let backend: AdminAPI.Backend
    /// In the order they start (the last stops first).
    let services: [any Service]
    /// Up once its listeners listen (or, for a session a reload added, once it failed).
    let up: Readiness

    /// The one part of ``up``.
    static let listening = "listening"

    /// The readiness part of this session's listeners.
    static func readinessPart(_ name: String) -> String { "proxy \(name)" }

    /// Assembles the session; nothing runs yet. `passed`: the listening sockets systemd passed
    /// for it. Throws a ``CommandError`` naming what to fix.
    static func make(
        _ prepared: Prepared,
        passed: [Int32],
        shared: Shared,
        logger daemonLogger: Logger
    ) throws -> DaemonSession {
        var logger = daemonLogger
        if prepared.named { logger[metadataKey: "session"] = "\(prepared.session)" }
        let key = prepared.named ? "sessions.\(prepared.session).store.path" : "store.path"
        var settings = prepared.settings
        settings.tracing = shared.tracer.map { ProxyTracing(tracer: $0) }
        settings.accessLines = shared.accessLog
        // A store error is mapped to exit 78 by `serve`, as every other failure here.
        let engine: TokenEngine
        do {
            engine = try TokenEngine.make(prepared, tracer: shared.tracer, logger: logger)
        } catch let error as StoreError where error.code == .inUse {
            // At start nothing of this daemon's holds it: another config names the same store.
            throw CommandError(
                key: key,
                "\(error.holder ?? "the token store is in use by another bearerd"): give this config a store of its own (\(key)), or stop that bearerd; two daemons on one store would send one refresh token twice"
            )
        }
        let control = ProxyControl()
        var services: [any Service] = []
        if let fleet = engine.fleet, let manager = engine.manager {
            // First, so it stops last: the token manager settles before the pool closes.
            services.append(FleetService(store: fleet, manager: manager, logger: logger))
        }
        services.append(TokenClientService(engine: engine))
        if let manager = engine.manager {
            services.append(TokenRefreshService(manager: manager))
        }
        var backend = engine.backend
        if case .perCaller(let callers, _) = engine {
            services.append(CallerSweepService(sessions: callers))
            // Who may log in is whom the listeners admit, as the last reload left their lists.
            backend = .perCaller(
                callers,
                admits: { [control] caller in
                    guard let admission = control.admission else { return false }
                    // An admin call is not on an event loop: the account's groups may be asked.
                    if admission.needsGroups(caller) { _ = AccountGroups.shared.lookUp(caller.uid) }
                    return admission.admits(caller)
                }
            )
        }
        let readiness = shared.readiness
        let part = Self.readinessPart(prepared.session)
        let up = Readiness(parts: [Self.listening])
        services.append(
            ProxyServer(
                settings: settings,
                tokens: engine.provider,
                group: shared.group,
                logger: logger,
                passed: passed,
                control: control,
                onListening: { _ in
                    readiness.mark(part)
                    up.mark(Self.listening)
                }
            )
        )
        return DaemonSession(
            name: prepared.session,
            engine: engine,
            proxy: control,
            backend: backend,
            services: services,
            up: up
        )
    }

    /// What every session of the daemon shares.
    struct Shared: Sendable {
        let group: any EventLoopGroup
        let tracer: (any Tracer)?
        let accessLog: AccessLog
        let readiness: Readiness
    }

    /// Which of the sockets systemd passed serve which session: all of them the only session's;
    /// with `sessions:`, each socket named after its session (`FileDescriptorName=NAME`).
    static func passedSockets(
        _ sockets: [ListenFDs.Passed],
        sessions: [Prepared]
    ) throws -> [String: [Int32]] {
        guard let first = sessions.first, first.named else {
            return [sessions.first?.session ?? ConfiguredSessions.defaultName: sockets.map(\.descriptor)]
        }
        var passed: [String: [Int32]] = [:]
        let names = Set(sessions.map(\.session))
        for socket in sockets {
            guard names.contains(socket.name) else {
                throw CommandError(
                    "systemd passed a socket named \(socket.name), and no session has that name: with sessions:, name each .socket unit's sockets after their session (FileDescriptorName=NAME)",
                    code: .config
                )
            }
            passed[socket.name, default: []].append(socket.descriptor)
        }
        return passed
    }
}
