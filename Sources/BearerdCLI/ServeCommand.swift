import ArgumentParser
import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdProxy
import BearerdStore
import BearerdSystemd
import BearerdTokens
import Foundation
import Logging
import Metrics
import NIOCore
import NIOPosix
import Prometheus
import ServiceLifecycle
import UnixSignals

/// `bearerd serve`: runs the proxy until SIGTERM or SIGINT.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the proxy in the foreground until SIGTERM or SIGINT.",
        discussion: """
            Reads the config file, then listens on every `listen` address and forwards each \
            request to `upstream.url` with `Authorization: Bearer <token>`. On SIGTERM or SIGINT \
            it stops accepting connections, lets in-flight requests finish for up to \
            `shutdown_grace`, and exits 0. Logs go to standard error, one logfmt line per event.
            """
    )

    @OptionGroup var options: ConfigOption

    func run() async throws {
        let environment = ProcessInfo.processInfo.environment
        let journald = environment["JOURNAL_STREAM"] != nil
        let prepared: Prepared
        switch Startup.prepare(configPath: self.options.path, logger: Self.bootstrapLogger(journald: journald)) {
        case .success(let value): prepared = value
        case .failure(let failure):
            StandardError.emit(failure.report)
            throw ExitCode(78)  // EX_CONFIG
        }
        let level = LogLevelSetting(Logger.Level(rawValue: prepared.configuration.log.level) ?? .info)
        LoggingSystem.bootstrap { label in LogfmtLogHandler(label: label, level: level, journald: journald) }
        // Before anything makes a metric: they are made against the factory bootstrapped here.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "bearerd")
        if prepared.configuration.auth.allowInsecureHTTP {
            logger.warning(
                "allow_insecure_http is on: the token, the client secret and the refresh token may cross the network over plain http"
            )
        }
        let threads = prepared.configuration.threads == 0 ? System.coreCount : prepared.configuration.threads
        let group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        let tokens: any TokenProvider
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
        var transport: HTTPClientTokenTransport?
        let backend: AdminAPI.Backend
        var engine: TokenManager?
        switch prepared.tokens {
        case .staticToken(let provider):
            tokens = provider
            backend = .staticToken(provider, path: prepared.configuration.auth.staticTokenFile ?? "")
        case .engine(let source, let seed, let policy, let caFile, let timeout, let connectTimeout):
            do {
                transport = try HTTPClientTokenTransport(
                    caFile: caFile,
                    timeout: timeout,
                    connectTimeout: connectTimeout
                )
            } catch {
                StandardError.emit("bearerd: cannot set up the token client: \(error)")
                throw ExitCode(78)
            }
            let store: any TokenStore
            do {
                store = try Self.openStore(prepared.configuration.store, logger: logger)
            } catch {
                try? await transport?.shutdown()
                StandardError.emit("bearerd: \(error)")
                throw ExitCode(78)
            }
            let manager = TokenManager(
                source: source,
                transport: transport!,
                store: store,
                seed: seed,
                policy: policy,
                logger: logger
            )
            tokens = manager
            backend = .engine(manager)
            engine = manager
            services.append(.init(service: TokenRefreshService(manager: manager)))
        }
        let readiness = Readiness(parts: ["proxy", "admin"])
        let activation = ListenFDs(environment: environment, processID: getpid())
        for socket in activation?.sockets ?? [] where !ListenFDs.isListeningStream(socket.descriptor) {
            try? await transport?.shutdown()
            StandardError.emit(
                "bearerd: systemd passed descriptor \(socket.descriptor) (\(socket.name)), which is not a listening stream socket: check the .socket unit (ListenStream=)"
            )
            throw ExitCode(78)
        }
        let adminSocket = prepared.configuration.admin.socket
        if let problem = Self.prepareDirectory(of: adminSocket) {
            try? await transport?.shutdown()
            StandardError.emit("bearerd: admin.socket: \(problem)")
            throw ExitCode(78)
        }
        let api = AdminAPI(backend: backend, logger: logger, metrics: Self.exposition(registry, backend))
        services.append(
            .init(
                service: AdminServer(
                    path: adminSocket,
                    api: api,
                    group: group,
                    logger: logger,
                    onReady: { readiness.mark("admin") }
                )
            )
        )
        if case .tcp(let host, let port) = prepared.configuration.admin.metricsListen {
            services.append(
                .init(service: MetricsServer(host: host, port: port, api: api, group: group, logger: logger))
            )
        }
        let proxyControl = ProxyControl()
        let server = ProxyServer(
            configuration: prepared.configuration,
            settings: prepared.settings,
            tokens: tokens,
            group: group,
            logger: logger,
            passed: activation?.sockets.map(\.descriptor) ?? [],
            control: proxyControl,
            onListening: { _ in readiness.mark("proxy") }
        )
        services.append(.init(service: server))
        let (reloads, reloadEvents) = AsyncStream.makeStream(of: SystemdNotifyService.ReloadEvent.self)
        services.append(
            .init(
                service: ReloadService(
                    configPath: self.options.path,
                    running: prepared.configuration,
                    proxy: proxyControl,
                    manager: engine,
                    logLevel: level,
                    events: reloadEvents,
                    logger: logger
                )
            )
        )
        // Last, so that at shutdown it is told first and says STOPPING=1 before the drain.
        services.append(
            .init(
                service: SystemdNotifyService(
                    environment: environment,
                    processID: getpid(),
                    readiness: readiness,
                    reloads: reloads,
                    logger: logger,
                    status: { await StatusLine.text(backend) }
                )
            )
        )
        let serviceGroup = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                cancellationSignals: [],
                logger: logger
            )
        )
        do {
            try await serviceGroup.run()
        } catch {
            logger.critical("bearerd stopped on an error", metadata: ["error": "\(error)"])
            try? await transport?.shutdown()
            try? await group.shutdownGracefully()
            throw ExitCode.failure
        }
        try? await transport?.shutdown()
        try? await group.shutdownGracefully()
    }

    /// A logger for the steps before the config (and so the log level) is known.
    private static func bootstrapLogger(journald: Bool) -> Logger {
        Logger(label: "bearerd") { label in LogfmtLogHandler(label: label, level: .info, journald: journald) }
    }
}
