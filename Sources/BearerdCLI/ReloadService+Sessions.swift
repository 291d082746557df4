import BearerdAdmin
import BearerdConfig
import BearerdProxy
import Logging
import Synchronization

/// What a daemon needs to start and stop sessions after it started.
struct SessionLifecycle: Sendable {
    let supervisor: SessionSupervisor
    let directory: SessionDirectory
    let shared: DaemonSession.Shared
    let logger: Logger
}

/// The sessions a reload starts and stops: a session the config gained starts (its store opened,
/// its listeners bound) and one it lost stops (its listeners close, its connections drain, its
/// store stays on disk). The others keep their connections, tokens and timers.
extension ReloadService {
    struct SessionChange {
        /// Made, not running yet: a session that cannot be made refuses the whole reload.
        var starting: [(Prepared, DaemonSession)] = []
        var stopping: [String] = []
    }

    struct Refusal: Error {
        let reason: String
    }

    /// The sessions to start and to stop, each to start made now; or why the reload is refused
    /// before anything changes.
    func sessionChange(_ prepared: [Prepared]) async -> Result<SessionChange, Refusal> {
        let running = Set(self.sessions.withLock { $0.keys })
        let stopping = running.subtracting(prepared.map(\.session)).sorted()
        let adding = prepared.filter { !running.contains($0.session) }
        if let first = prepared.first, first.named != self.named {
            return .failure(
                Refusal(
                    reason:
                        "the config \(self.named ? "no longer has" : "now has") a sessions: map: restart bearerd to change how its sessions are named"
                )
            )
        }
        guard !stopping.isEmpty || !adding.isEmpty else { return .success(SessionChange()) }
        guard let lifecycle = self.lifecycle else {
            return .failure(Refusal(reason: "sessions are added and removed by a running daemon only"))
        }
        var change = SessionChange(stopping: stopping)
        for session in adding {
            do {
                let made = try DaemonSession.make(
                    session,
                    passed: [],
                    shared: lifecycle.shared,
                    logger: lifecycle.logger
                )
                change.starting.append((session, made))
            } catch {
                for (_, made) in change.starting { await made.engine.close() }
                return .failure(Refusal(reason: "session \(session.session) cannot start: \(error)"))
            }
        }
        return .success(change)
    }

    /// A session ended without a reload stopping it (one a reload added failed later): it is
    /// no longer listed, and the next reload that names it starts it again.
    func forget(_ name: String) {
        // A later reload may have started a session of that name again: that one stays.
        if self.lifecycle?.supervisor.isRunning(name) == true { return }
        self.lifecycle?.directory.remove(name)
        self.sessions.withLock { _ = $0.removeValue(forKey: name) }
        self.running.withLock { _ = $0.removeValue(forKey: name) }
    }

    /// Stops the sessions that went, then starts the new ones (so that a listener can pass from
    /// one to another). Returns what could not start.
    func apply(_ change: SessionChange) async -> [String] {
        guard let lifecycle = self.lifecycle else { return [] }
        for name in change.stopping {
            lifecycle.directory.remove(name)
            await lifecycle.supervisor.stop(name)
            self.sessions.withLock { _ = $0.removeValue(forKey: name) }
            self.running.withLock { _ = $0.removeValue(forKey: name) }
            self.logger.notice("session stopped; its store stays on disk", metadata: ["session": "\(name)"])
        }
        var failed: [String] = []
        for (prepared, session) in change.starting {
            switch await lifecycle.supervisor.start(session) {
            case .success:
                lifecycle.directory.set(session.name, session.backend)
                self.sessions.withLock { $0[session.name] = (session.proxy, session.engine.timing) }
                self.running.withLock { $0[session.name] = prepared.configuration.written }
                self.logger.notice(
                    "session started",
                    metadata: [
                        "session": "\(session.name)",
                        "listening": "\(session.proxy.addresses.joined(separator: ","))",
                    ]
                )
            case .failure(let error):
                // Whether it never ran or ran and failed, its store and client go (closing twice
                // is harmless).
                await session.engine.close()
                failed.append("session \(session.name) cannot start: \(error)")
            }
        }
        return failed
    }
}
