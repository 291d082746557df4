import BearerdConfig
import BearerdProxy
import BearerdSystemd
import BearerdTokens
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// SIGHUP re-reads the config file. Upstream, timeouts, limits, listeners, refresh margins and
/// the log level change without dropping a request; a config with errors is refused (each error
/// logged) and the running one keeps serving; a change of token source or store is reported and
/// waits for a restart.
final class ReloadService: Service, Sendable {
    let configPath: String
    let environment: [String: String]
    let running: Mutex<BearerdConfiguration>
    let proxy: ProxyControl
    let manager: TokenManager?
    let logLevel: LogLevelSetting
    let events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation
    let logger: Logger

    init(
        configPath: String,
        environment: [String: String],
        running: BearerdConfiguration,
        proxy: ProxyControl,
        manager: TokenManager?,
        logLevel: LogLevelSetting,
        events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation,
        logger: Logger
    ) {
        self.configPath = configPath
        self.environment = environment
        self.running = Mutex(running)
        self.proxy = proxy
        self.manager = manager
        self.logLevel = logLevel
        self.events = events
        self.logger = logger
    }

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        for await _ in hangups.cancelOnGracefulShutdown() {
            await self.reload()
        }
        self.events.finish()
    }

    func reload() async {
        self.events.yield(.started)
        defer { self.events.yield(.finished) }
        self.logger.notice("SIGHUP: reloading the config", metadata: ["path": "\(self.configPath)"])
        let prepared: Prepared
        switch Startup.prepare(configPath: self.configPath, logger: self.logger, environment: self.environment) {
        case .success(let value):
            prepared = value
        case .failure(let failure):
            self.logger.error(
                "the new config has errors; the running config keeps serving",
                metadata: ["errors": "\(failure.message)"]
            )
            return
        }
        let new = prepared.configuration
        let old = self.running.withLock { $0 }
        do {
            try await self.proxy.reload(configuration: new, settings: prepared.settings)
        } catch {
            self.logger.error(
                "cannot apply the new config; the running config keeps serving",
                metadata: ["error": "\(error)"]
            )
            return
        }
        await self.manager?.update(policy: TokenPlan.policy(new.auth))
        self.logLevel.value = new.log.level
        self.logger.debug("log level applied", metadata: ["log_level": "\(new.log.level)"])
        let restartOnly = RestartOnlyKeys.changed(from: old, to: new)
        let useless = restartOnly.filter { RestartOnlyKeys.session.contains($0) }
        if !useless.isEmpty {
            self.logger.error(
                "the token source or the store changed: the stored tokens belong to the running one, which keeps serving; restart bearerd to switch, then run `bearerd login` if the new token server needs it",
                metadata: ["keys": "\(useless.joined(separator: ","))"]
            )
        }
        let later = restartOnly.filter { !RestartOnlyKeys.session.contains($0) }
        if !later.isEmpty {
            self.logger.warning(
                "these keys take effect at the next restart",
                metadata: ["keys": "\(later.joined(separator: ","))"]
            )
        }
        // What runs now; the restart-only keys keep their running values for the next comparison.
        self.running.withLock { $0 = restartOnly.isEmpty ? new : Self.merging(new, keepingSessionOf: old) }
        self.logger.notice(
            "config reloaded",
            metadata: [
                "listening": "\(self.proxy.addresses.joined(separator: ","))",
                "upstream": "\(prepared.settings.upstream.target)",
            ]
        )
    }

    /// `new`, with the token source and store that keep running.
    static func merging(_ new: BearerdConfiguration, keepingSessionOf old: BearerdConfiguration) -> BearerdConfiguration
    {
        var merged = new
        merged.auth.source = old.auth.source
        merged.auth.refreshTokenFile = old.auth.refreshTokenFile
        merged.auth.caFile = old.auth.caFile
        merged.auth.tlsClientCertificate = old.auth.tlsClientCertificate
        merged.auth.verify = old.auth.verify
        merged.auth.dpop = old.auth.dpop
        merged.auth.requestTimeout = old.auth.requestTimeout
        merged.auth.connectTimeout = old.auth.connectTimeout
        merged.store = old.store
        merged.admin = old.admin
        merged.threads = old.threads
        merged.shutdownGrace = old.shutdownGrace
        merged.written = RestartOnlyKeys.running(new.written, keeping: old.written)
        return merged
    }
}

extension ReloadService: CustomStringConvertible {
    /// What service-lifecycle logs.
    var description: String { "ReloadService" }
}
