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

/// The running daemon, wired in this one place: the token engine and its client, the admin
/// socket, the metrics listener, the proxy, reload and systemd's notify socket, each a
/// `Service` of one group, in the order they must stop (the last is told first).
struct Daemon {
    private let group: MultiThreadedEventLoopGroup
    private let serviceGroup: ServiceGroup
    private let logger: Logger
    /// The access lines' writer, flushed and stopped once the proxy has drained.
    private let accessLog: AccessLog

    /// Assembles every part; nothing runs yet. Throws a ``CommandError`` naming what to fix.
    init(
        prepared: Prepared,
        configPath: String,
        environment: [String: String],
        registry: PrometheusCollectorRegistry,
        logLevel: LogLevelSetting,
        logger: Logger
    ) throws {
        let configuration = prepared.configuration
        let activation = ListenFDs(environment: environment, processID: getpid())
        for socket in activation?.sockets ?? [] where !ListenFDs.isListeningStream(socket.descriptor) {
            throw CommandError(
                "systemd passed descriptor \(socket.descriptor) (\(socket.name)), which is not a listening stream socket: check the .socket unit (ListenStream=)",
                code: .config
            )
        }
        if let problem = Self.prepareDirectory(of: configuration.admin.socket) {
            throw CommandError(key: "admin.socket", problem)
        }
        // Before the engine and the proxy, which take its tracer.
        let tracing = try DaemonTracing.make(configuration.tracing, environment: environment, logger: logger)
        var settings = prepared.settings
        settings.tracing = tracing.map { ProxyTracing(tracer: $0.tracer) }
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
        settings.accessLines = accessLog
        // A store error is mapped to exit 78 by `serve`, as every other failure here.
        let engine: TokenEngine
        do {
            engine = try TokenEngine.make(prepared, tracer: tracing?.tracer, logger: logger)
        } catch let error as StoreError where error.code == .inUse {
            // At start nothing of this daemon's holds it: another config names the same store.
            throw CommandError(
                key: "store.path",
                "\(error.holder ?? "the token store is in use by another bearerd"): give this config a store of its own (store.path), or stop that bearerd; two daemons on one store would send one refresh token twice"
            )
        }
        let threads = configuration.threads == 0 ? System.coreCount : configuration.threads
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let readiness = Readiness(parts: ["proxy", "admin"])
        let backend = engine.backend
        let proxyControl = ProxyControl()
        let (reloads, reloadEvents) = AsyncStream.makeStream(of: SystemdNotifyService.ReloadEvent.self)
        let reload = ReloadService(
            configPath: configPath,
            environment: environment,
            running: configuration,
            proxy: proxyControl,
            manager: engine.manager,
            logLevel: logLevel,
            events: reloadEvents,
            logger: logger,
            reopenLogs: { accessLog.reopen() }
        )
        let api = AdminAPI(
            backend: backend,
            logger: logger,
            metrics: Self.exposition(registry, backend),
            reload: { await reload.requestReload(trigger: "bearerd reload") }
        )
        var services: [any Service] = []
        // First, so it stops last: the spans of the drain are sent too.
        if let tracing { services.append(tracing.service) }
        if let fleet = engine.fleet, let manager = engine.manager {
            // First, so it stops last: the token manager settles before the pool closes.
            services.append(FleetService(store: fleet, manager: manager, logger: logger))
        }
        services.append(TokenClientService(engine: engine))
        if let manager = engine.manager {
            services.append(TokenRefreshService(manager: manager))
        }
        services.append(
            AdminServer(
                path: configuration.admin.socket,
                api: api,
                group: group,
                logger: logger,
                onReady: { readiness.mark("admin") }
            )
        )
        if case .tcp(let host, let port) = configuration.admin.metricsListen {
            services.append(MetricsServer(host: host, port: port, api: api, group: group, logger: logger))
        }
        services.append(
            ProxyServer(
                settings: settings,
                tokens: engine.provider,
                group: group,
                logger: logger,
                passed: activation?.sockets.map(\.descriptor) ?? [],
                control: proxyControl,
                onListening: { _ in readiness.mark("proxy") }
            )
        )
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
                status: { await StatusLine.text(backend) }
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
