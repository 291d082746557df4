import ArgumentParser
import BearerdConfig
import Foundation
import Logging
import Metrics
import Prometheus

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
        let environment = self.options.environment
        let journald = environment["JOURNAL_STREAM"] != nil
        let sessions: [Prepared]
        switch Startup.prepareSessions(
            configPath: self.options.path,
            logger: Self.bootstrapLogger(journald: journald),
            environment: environment
        ) {
        case .success(let value): sessions = value
        case .failure(let failure):
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(78)  // EX_CONFIG
        }
        let level = LogLevelSetting(sessions[0].configuration.log.level)
        LoggingSystem.bootstrap { label in LogfmtLogHandler(label: label, level: level, journald: journald) }
        // Before anything makes a metric: they are made against the factory bootstrapped here.
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "bearerd")
        for prepared in sessions {
            var logger = logger
            if prepared.named { logger[metadataKey: "session"] = "\(prepared.session)" }
            if prepared.configuration.auth.allowInsecureHTTP {
                logger.warning(
                    "allow_insecure_http is on: the token, the client secret and the refresh token may cross the network over plain http"
                )
            }
            do {
                // A definite "no metadata here" is a config error like any other (exit 78); an
                // issuer that does not answer now may later, so the daemon starts and the engine
                // retries.
                if case .unreachable(let why) = try await Startup.discover(prepared, logger: logger) {
                    logger.warning("auth.issuer cannot be reached; starting anyway", metadata: ["reason": "\(why)"])
                }
            } catch {
                StandardError.emit("bearerd: \(error.message)")
                throw ExitCode(error.exitCode)
            }
        }
        let daemon: Daemon
        do {
            daemon = try Daemon(
                sessions: sessions,
                configPath: self.options.path,
                environment: environment,
                registry: registry,
                logLevel: level,
                logger: logger
            )
        } catch {
            let failure = error as? CommandError ?? CommandError("\(error)", code: .config, underlying: error)
            StandardError.emit("bearerd: \(failure.message)")
            throw ExitCode(failure.exitCode)
        }
        do {
            try await daemon.run()
        } catch {
            throw ExitCode.failure
        }
    }

    /// A logger for the steps before the config (and so the log level) is known.
    private static func bootstrapLogger(journald: Bool) -> Logger {
        Logger(label: "bearerd") { label in LogfmtLogHandler(label: label, level: .info, journald: journald) }
    }
}
