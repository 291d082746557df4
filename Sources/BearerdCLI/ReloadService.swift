import BearerdAdmin
import BearerdConfig
import BearerdProxy
import BearerdSystemd
import BearerdTokens
import Logging
import ServiceLifecycle
import Synchronization
import UnixSignals

/// SIGHUP, or `POST /v1/reload` on the admin socket (`bearerd reload`, systemd's
/// `ExecReload=`), re-reads the config file. Upstream, timeouts, limits, listeners, refresh
/// margins and the log level change without dropping a request; a config with errors is refused
/// (each error logged, and told to the one who asked) and the running one keeps serving; a
/// change of token source or store is reported and waits for a restart. Reloads run one at a
/// time, in the order asked.
final class ReloadService: Service, Sendable {
    /// One reload asked for; `answer` hears how it came out (a signal has no one to answer).
    struct Request: Sendable {
        let trigger: String
        let answer: CheckedContinuation<ReloadOutcome, Never>?
        /// Not a reload: a session that ended on its own is forgotten, in turn with the reloads
        /// (one that is starting it hears first, and records it before this removes it).
        var forget: String? = nil
    }

    let configPath: String
    let environment: [String: String]
    /// What was written for the config that runs, session by session and key by key: the next
    /// reload compares against it. The keys a reload does not apply keep their values from the
    /// start (``RestartOnlyKeys``).
    let running: Mutex<[String: WrittenValues]>
    /// Each running session's listeners and token engine, by name.
    let sessions: Mutex<[String: (proxy: ProxyControl, timing: (any RefreshTiming)?)]>
    /// How sessions start and stop, for a reload that adds or removes some; `nil` where no
    /// daemon runs them (a test's reload of one proxy).
    let lifecycle: SessionLifecycle?
    /// Whether the running config has `sessions:` (its keys are then named under it).
    let named: Bool
    let logLevel: LogLevelSetting
    let events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation
    let logger: Logger
    /// Opens the log files again (`log.access_file`): at every reload, applied or refused, since
    /// logrotate's `postrotate` asks for one and a broken config must not leave the lines going
    /// to a file already rotated away (and compressed, then deleted, a day later).
    let reopenLogs: @Sendable () -> Void
    private let requests: AsyncStream<Request>
    private let enqueue: AsyncStream<Request>.Continuation

    /// The daemon's sessions, as they started.
    convenience init(
        configPath: String,
        environment: [String: String],
        running: [Prepared],
        sessions: [DaemonSession],
        lifecycle: SessionLifecycle,
        logLevel: LogLevelSetting,
        events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation,
        logger: Logger,
        reopenLogs: @escaping @Sendable () -> Void = {}
    ) {
        self.init(
            configPath: configPath,
            environment: environment,
            running: Dictionary(running.map { ($0.session, $0.configuration.written) }) { first, _ in first },
            sessions: Dictionary(sessions.map { ($0.name, ($0.proxy, $0.engine.timing)) }) { first, _ in first },
            named: running.first?.named ?? false,
            lifecycle: lifecycle,
            logLevel: logLevel,
            events: events,
            logger: logger,
            reopenLogs: reopenLogs
        )
    }

    /// A config without `sessions:`: its one session, `default`.
    convenience init(
        configPath: String,
        environment: [String: String],
        running: BearerdConfiguration,
        proxy: ProxyControl,
        manager: TokenManager?,
        logLevel: LogLevelSetting,
        events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation,
        logger: Logger,
        reopenLogs: @escaping @Sendable () -> Void = {}
    ) {
        self.init(
            configPath: configPath,
            environment: environment,
            running: [ConfiguredSessions.defaultName: running.written],
            sessions: [ConfiguredSessions.defaultName: (proxy, manager)],
            named: false,
            lifecycle: nil,
            logLevel: logLevel,
            events: events,
            logger: logger,
            reopenLogs: reopenLogs
        )
    }

    init(
        configPath: String,
        environment: [String: String],
        running: [String: WrittenValues],
        sessions: [String: (proxy: ProxyControl, timing: (any RefreshTiming)?)],
        named: Bool,
        lifecycle: SessionLifecycle?,
        logLevel: LogLevelSetting,
        events: AsyncStream<SystemdNotifyService.ReloadEvent>.Continuation,
        logger: Logger,
        reopenLogs: @escaping @Sendable () -> Void
    ) {
        self.configPath = configPath
        self.environment = environment
        self.running = Mutex(running)
        self.sessions = Mutex(sessions)
        self.named = named
        self.lifecycle = lifecycle
        self.logLevel = logLevel
        self.events = events
        self.logger = logger
        self.reopenLogs = reopenLogs
        (self.requests, self.enqueue) = AsyncStream.makeStream(of: Request.self)
        lifecycle?.supervisor.whenASessionEndsOnItsOwn { [weak self] name in
            self?.enqueue.yield(Request(trigger: "", answer: nil, forget: name))
        }
    }

    func run() async throws {
        let hangups = await UnixSignalsSequence(trapping: .sighup)
        await withDiscardingTaskGroup { group in
            group.addTask {
                for await _ in hangups.cancelOnGracefulShutdown() {
                    self.enqueue.yield(Request(trigger: "SIGHUP", answer: nil))
                }
                // Stopping: the reloads asked for so far still run and are answered.
                self.enqueue.finish()
            }
            for await request in self.requests {
                if let name = request.forget {
                    self.forget(name)
                    continue
                }
                let outcome = await self.reload(trigger: request.trigger)
                request.answer?.resume(returning: outcome)
            }
        }
        self.events.finish()
    }

    /// Asks for a reload and returns once the new config is live or refused.
    func requestReload(trigger: String) async -> ReloadOutcome {
        await withCheckedContinuation { answer in
            if case .terminated = self.enqueue.yield(Request(trigger: trigger, answer: answer)) {
                answer.resume(returning: .refused("bearerd is stopping; the config is read at its next start"))
            }
        }
    }

    @discardableResult
    func reload(trigger: String = "SIGHUP") async -> ReloadOutcome {
        self.events.yield(.started)
        defer { self.events.yield(.finished) }
        self.reopenLogs()
        self.logger.notice("\(trigger): reloading the config", metadata: ["path": "\(self.configPath)"])
        let prepared: [Prepared]
        switch Startup.prepareSessions(configPath: self.configPath, logger: self.logger, environment: self.environment)
        {
        case .success(let value):
            prepared = value
        case .failure(let failure):
            self.logger.error(
                "the new config has errors; the running config keeps serving",
                metadata: ["errors": "\(failure.message)"]
            )
            return .refused(failure.message)
        }
        let change: SessionChange
        switch await self.sessionChange(prepared) {
        case .success(let value): change = value
        case .failure(let refusal):
            self.logger.error(
                "the new config has errors; the running config keeps serving",
                metadata: ["errors": "\(refusal.reason)"]
            )
            return .refused(refusal.reason)
        }
        var pending: [String] = []
        // A session whose new config cannot be applied keeps its running one; the others take
        // theirs, and the reload says which did not.
        var failed: [String] = []
        var appliedAny = false
        for session in prepared {
            guard let target = self.sessions.withLock({ $0[session.session] }) else { continue }
            let spell = { (key: String) in ConfigLoader.spelled(key, session: self.named ? session.session : nil) }
            let of = self.named ? " of session \(session.session)" : ""
            let new = session.configuration
            let old = self.running.withLock { $0[session.session] } ?? WrittenValues()
            let restartOnly = RestartOnlyKeys.changed(from: old, to: new.written)
            let useless = restartOnly.filter { RestartOnlyKeys.session.contains($0) }
            // What the token is for and whom it is from: the token source and the store, the
            // keys that say what it is for (its resource, scopes, audience), or, with
            // auth.discover, the upstream itself (it names its token server).
            let tokenSide = restartOnly.filter {
                RestartOnlyKeys.session.contains($0) || RestartOnlyKeys.tokenPurpose.contains($0)
            }
            let discovers = [old["auth.discover"], new.written["auth.discover"]].contains {
                $0.flatMap(ConfigValueParsers.bool) == true
            }
            if old["upstream.url"] != new.written["upstream.url"], !tokenSide.isEmpty || discovers {
                // The running token source's token would go to the new upstream, an API it was
                // not meant for: nothing of this session's new config is applied.
                let keys = (["upstream.url"] + tokenSide + (discovers ? ["auth.discover"] : [])).map(spell)
                    .joined(separator: ", ")
                self.logger.error(
                    "the upstream and the token source changed together: the new upstream would get the running token source's token; this session keeps its running config; restart bearerd to switch both",
                    metadata: ["keys": "\(keys)"].merging(self.named ? ["session": "\(session.session)"] : [:]) {
                        first,
                        _ in first
                    }
                )
                failed.append(
                    "the new config\(of) changes upstream.url and what its token is for together (\(keys)): the running token source's token would go to the new upstream, so nothing of this session's new config was applied; restart bearerd to switch both"
                )
                continue
            }
            do {
                try await target.proxy.reload(settings: session.settings)
            } catch {
                self.logger.error(
                    "cannot apply the new config; the running config keeps serving",
                    metadata: ["error": "\(error)", "session": "\(session.session)"]
                )
                failed.append("cannot apply the new config\(of): \(error)")
                continue
            }
            await target.timing?.update(policy: TokenPlan.policy(new.auth))
            if RestartOnlyKeys.running(new.written, keeping: old) != old { appliedAny = true }
            if !useless.isEmpty {
                self.logger.error(
                    "the token source or the store changed: the stored tokens belong to the running one, which keeps serving; restart bearerd to switch, then run `bearerd login` if the new token server needs it",
                    metadata: ["keys": "\(useless.map(spell).joined(separator: ","))"]
                )
            }
            let later = restartOnly.filter { !RestartOnlyKeys.session.contains($0) }
            if !later.isEmpty {
                self.logger.warning(
                    "these keys take effect at the next restart",
                    metadata: ["keys": "\(later.map(spell).joined(separator: ","))"]
                )
            }
            pending += restartOnly.map(spell).filter { !pending.contains($0) }
            // What runs now; the restart-only keys keep their running values for the next comparison.
            self.running.withLock { $0[session.session] = RestartOnlyKeys.running(new.written, keeping: old) }
            self.logger.notice(
                "config reloaded",
                metadata: [
                    "listening": "\(target.proxy.addresses.joined(separator: ","))",
                    "upstream": "\(session.settings.upstream.target)",
                ].merging(self.named ? ["session": "\(session.session)"] : [:]) { first, _ in first }
            )
        }
        if let first = prepared.first {
            self.logLevel.value = first.configuration.log.level
            self.logger.debug("log level applied", metadata: ["log_level": "\(first.configuration.log.level)"])
        }
        let notStarted = await self.apply(change)
        failed += notStarted
        appliedAny = appliedAny || !change.stopping.isEmpty || change.starting.count > notStarted.count
        guard failed.isEmpty else {
            let reason = failed.joined(separator: "; ")
            return appliedAny ? .partlyApplied(failed: reason, restartPending: pending) : .notApplied(reason)
        }
        return .applied(restartPending: pending)
    }
}

extension ReloadService: CustomStringConvertible {
    /// What service-lifecycle logs.
    var description: String { "ReloadService" }
}
