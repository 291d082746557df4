import BearerdAdmin
import BearerdConfig
import BearerdFleet
import BearerdProxy
import BearerdStore
import BearerdSystemd
import BearerdTokens
import Foundation
import Logging
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import UnixSignals

#if canImport(Glibc)
import Glibc
#endif

/// The running daemon, wired in this one place: each session's token engine, its client and its
/// listeners (``DaemonSession``), the admin socket, the metrics listener, reload and systemd's
/// notify socket, each a `Service` of one group, in the order they must stop (the last is told
/// first).
struct Daemon {
    private let group: MultiThreadedEventLoopGroup
    private let serviceGroup: ServiceGroup
    private let logger: Logger
    /// The access lines' writer, flushed and stopped once the proxy has drained.
    private let accessLog: AccessLog

    /// Assembles every part of every session; nothing runs yet. Throws a ``CommandError``
    /// naming what to fix.
    init(
        sessions prepared: [Prepared],
        configPath: String,
        environment: [String: String],
        registry: PrometheusCollectorRegistry,
        logLevel: LogLevelSetting,
        logger: Logger
    ) throws {
        // The daemon-wide keys are the same in every session's configuration.
        let configuration = prepared[0].configuration
        let activation = ListenFDs(environment: environment, processID: getpid())
        for socket in activation?.sockets ?? [] where !ListenFDs.isListeningStream(socket.descriptor) {
            throw CommandError(
                "systemd passed descriptor \(socket.descriptor) (\(socket.name)), which is not a listening stream socket: check the .socket unit (ListenStream=)",
                code: .config
            )
        }
        let passed = try DaemonSession.passedSockets(activation?.sockets ?? [], sessions: prepared)
        let openToCallers = prepared.contains { $0.configuration.callers.enabled }
        if let problem = Self.prepareDirectory(of: configuration.admin.socket, openToCallers: openToCallers) {
            throw CommandError(key: "admin.socket", problem)
        }
        // Before the engines and the proxies, which take its tracer.
        let tracing = try DaemonTracing.make(configuration.tracing, environment: environment, logger: logger)
        // Started whether or not log.access is on now: a reload may turn it on.
        let accessLog: AccessLog
        do {
            accessLog = try AccessLog(
                configuration.log.accessFile.map { .file($0) }
                    ?? .standardError(journald: environment["JOURNAL_STREAM"] != nil)
            )
        } catch {
            throw CommandError(key: "log.access_file", "\(error)")
        }
        let threads = configuration.threads == 0 ? System.coreCount : configuration.threads
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let readiness = Readiness(parts: Set(prepared.map { DaemonSession.readinessPart($0.session) } + ["admin"]))
        let shared = DaemonSession.Shared(
            group: group,
            tracer: tracing?.tracer,
            accessLog: accessLog,
            readiness: readiness
        )
        var sessions: [DaemonSession] = []
        do {
            for session in prepared {
                sessions.append(
                    try DaemonSession.make(
                        session,
                        passed: passed[session.session] ?? [],
                        shared: shared,
                        logger: logger
                    )
                )
            }
        } catch {
            try? group.syncShutdownGracefully()
            throw error
        }
        let named = prepared[0].named
        let directory = SessionDirectory(sessions.map { (name: $0.name, backend: $0.backend) })
        let supervisor = SessionSupervisor(sessions: sessions, logger: logger)
        let (reloads, reloadEvents) = AsyncStream.makeStream(of: SystemdNotifyService.ReloadEvent.self)
        let reload = ReloadService(
            configPath: configPath,
            environment: environment,
            running: prepared,
            sessions: sessions,
            lifecycle: SessionLifecycle(supervisor: supervisor, directory: directory, shared: shared, logger: logger),
            logLevel: logLevel,
            events: reloadEvents,
            logger: logger,
            reopenLogs: { accessLog.reopen() }
        )
        let api = AdminAPI(
            sessions: directory,
            named: named,
            logger: logger,
            metrics: Self.exposition(registry, directory, named: named),
            reload: { await reload.requestReload(trigger: "bearerd reload") }
        )
        var services: [any Service] = []
        // First, so it stops last: the spans of the drain are sent too.
        if let tracing { services.append(tracing.service) }
        services.append(supervisor)
        services.append(
            AdminServer(
                path: configuration.admin.socket,
                api: api,
                group: group,
                logger: logger,
                openToCallers: openToCallers,
                onReady: { readiness.mark("admin") }
            )
        )
        if case .tcp(let host, let port) = configuration.admin.metricsListen {
            services.append(MetricsServer(host: host, port: port, api: api, group: group, logger: logger))
        }
        services.append(reload)
        let liveness = EventLoopLiveness(group: group)
        // Last, so that at shutdown it is told first and says STOPPING=1 before the drain.
        services.append(
            SystemdNotifyService(
                environment: environment,
                processID: getpid(),
                readiness: readiness,
                reloads: reloads,
                logger: logger,
                alive: { deadline in await liveness.check(within: deadline) },
                status: { await StatusLine.text(directory.all) }
            )
        )
        self.group = group
        self.logger = logger
        self.accessLog = accessLog
        self.serviceGroup = ServiceGroup(
            configuration: .init(
                services: services.map { .init(service: $0) },
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
        TestFaults.arm(environment: environment, group: group, logger: logger)
    }

    /// Runs until SIGTERM or SIGINT (or a service fails), then stops the event loops.
    func run() async throws {
        let outcome: Result<Void, any Error>
        do {
            try await self.serviceGroup.run()
            outcome = .success(())
        } catch {
            outcome = .failure(error)
        }
        try? await self.group.shutdownGracefully()
        // After the event loops: connections still open past shutdown_grace close with them,
        // and their exchanges' lines are written too.
        self.accessLog.stop()
        if case .failure(let error) = outcome {
            self.logger.critical("bearerd stopped on an error", metadata: ["error": "\(error)"])
            throw CommandError("bearerd stopped on an error: \(error)", underlying: error)
        }
    }
}
