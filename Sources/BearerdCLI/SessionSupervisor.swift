import BearerdSystemd
import Logging
import ServiceLifecycle
import Synchronization

/// Runs each session's services (``DaemonSession``) as a service group of its own, so that a
/// reload can start a session the config gained and stop one it lost while the others serve on.
/// A session the daemon started with that fails stops the daemon, as any part of it does; one a
/// reload added that fails is stopped, and the reload is told why.
final class SessionSupervisor: Service, Sendable {
    private enum Command: Sendable {
        case start(DaemonSession, started: @Sendable (Result<Void, any Error>) -> Void)
        case stop(String, stopped: @Sendable () -> Void)
    }

    /// A running session: its group, and who waits for it to end.
    private struct Running {
        let group: ServiceGroup
        var waiters: [@Sendable () -> Void] = []
    }

    /// The sessions the daemon starts with, until `run` takes them: nothing here keeps a session
    /// after it stopped (its engine, and its store's lock, go with its group).
    private let initial: Mutex<[DaemonSession]>
    private let logger: Logger
    private let commands: AsyncStream<Command>
    private let enqueue: AsyncStream<Command>.Continuation
    /// The running sessions, and whether the daemon is stopping: then no session starts, and
    /// none that ends is forgotten for it (one lock, so a start cannot slip past a stop).
    private let running = Mutex<(groups: [String: Running], stopping: Bool)>(([:], false))
    /// Told of a session that ended without being asked to (a reload-added one that failed
    /// after it started), so that it is no longer listed or reloaded as if it ran.
    private let onOwnEnd = Mutex<@Sendable (String) -> Void>({ _ in })

    init(sessions: [DaemonSession], logger: Logger) {
        self.initial = Mutex(sessions)
        self.logger = logger
        (self.commands, self.enqueue) = AsyncStream.makeStream(of: Command.self)
    }

    func run() async throws {
        let initial = self.initial.withLock { initial in
            defer { initial = [] }
            return initial
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for (index, session) in initial.enumerated() {
                // Nil once an initial session failed at once: the daemon is stopping, and the
                // sessions made but not started let their stores and clients go.
                guard let group = self.register(session) else {
                    for unstarted in initial[index...] { await unstarted.engine.close() }
                    break
                }
                let name = session.name
                tasks.addTask {
                    defer { self.ended(name) }
                    do {
                        try await group.run()
                    } catch {
                        // The daemon stops, as when any of its parts fails: the other sessions
                        // drain and stop too, rather than serve on in a daemon that is failing.
                        self.enqueue.finish()
                        await self.stopAll(but: name)
                        throw error
                    }
                }
            }
            // The sessions' groups hear a graceful shutdown themselves; the commands end with it.
            await withGracefulShutdownHandler {
                for await command in self.commands {
                    switch command {
                    case .start(let session, let started):
                        guard let group = self.register(session) else {
                            // Made, never to run: its store and client go now.
                            await session.engine.close()
                            started(.failure(StoppingError()))
                            continue
                        }
                        tasks.addTask {
                            let outcome: Result<Void, any Error>
                            do {
                                try await group.run()
                                outcome = .failure(StoppingError())
                            } catch {
                                self.logger.error(
                                    "a session the reload added stopped on an error",
                                    metadata: ["session": "\(session.name)", "error": "\(error)"]
                                )
                                outcome = .failure(error)
                            }
                            // Gone before the reload hears it failed: a next reload may add it again.
                            self.ended(session.name)
                            started(outcome)
                            // Whoever waits for its listeners hears it ended first.
                            session.up.mark(DaemonSession.listening)
                        }
                        tasks.addTask {
                            if await session.up.wait() { started(.success(())) }
                        }
                    case .stop(let name, let stopped):
                        let group = self.running.withLock { running -> ServiceGroup? in
                            guard running.groups[name] != nil else { return nil }
                            running.groups[name]?.waiters.append(stopped)
                            return running.groups[name]?.group
                        }
                        guard let group else {
                            stopped()
                            continue
                        }
                        await group.triggerGracefulShutdown()
                    }
                }
            } onGracefulShutdown: {
                self.running.withLock { $0.stopping = true }
                self.enqueue.finish()
            }
            try await tasks.waitForAll()
        }
    }

    /// Starts a session a reload added; returns once it listens, or with why it could not.
    func start(_ session: DaemonSession) async -> Result<Void, any Error> {
        await withCheckedContinuation { answer in
            let once = Mutex(false)
            let started: @Sendable (Result<Void, any Error>) -> Void = { result in
                let first = once.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { answer.resume(returning: result) }
            }
            if case .terminated = self.enqueue.yield(.start(session, started: started)) {
                started(.failure(StoppingError()))
            }
        }
    }

    /// Stops a session a reload removed, and returns once it has stopped: its listeners close,
    /// its connections drain as at a shutdown, its token client closes. Its store stays on disk.
    func stop(_ name: String) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if case .terminated = self.enqueue.yield(.stop(name, stopped: { done.resume() })) { done.resume() }
        }
    }

    /// The daemon is stopping: every running session's group but `name`'s is told to shut down
    /// gracefully, and none starts after.
    private func stopAll(but name: String) async {
        let groups = self.running.withLock { running in
            running.stopping = true
            return running.groups.filter { $0.key != name }.map(\.value.group)
        }
        for group in groups { await group.triggerGracefulShutdown() }
    }

    /// The session's group, registered as running; `nil` once the daemon is stopping.
    private func register(_ session: DaemonSession) -> ServiceGroup? {
        let group = ServiceGroup(
            configuration: .init(
                services: session.services.map { .init(service: $0) },
                gracefulShutdownSignals: [],
                cancellationSignals: [],
                logger: self.logger
            )
        )
        return self.running.withLock { running in
            guard !running.stopping else { return nil }
            running.groups[session.name] = Running(group: group)
            return group
        }
    }

    /// Whether a session of this name runs now (a reload may have started it again since one of
    /// that name ended).
    func isRunning(_ name: String) -> Bool {
        self.running.withLock { $0.groups[name] != nil }
    }

    /// `forget` is called with the name of each session that ends without a ``stop(_:)``.
    func whenASessionEndsOnItsOwn(_ forget: @escaping @Sendable (String) -> Void) {
        self.onOwnEnd.withLock { $0 = forget }
    }

    private func ended(_ name: String) {
        let (waiters, stopping) = self.running.withLock { running in
            (running.groups.removeValue(forKey: name)?.waiters, running.stopping)
        }
        guard let waiters, !waiters.isEmpty else {
            guard !stopping else { return }
            let forget = self.onOwnEnd.withLock { $0 }
            forget(name)
            return
        }
        for waiter in waiters { waiter() }
    }

    struct StoppingError: Error, CustomStringConvertible {
        var description: String { "bearerd is stopping" }
    }
}

extension SessionSupervisor: CustomStringConvertible {
    /// What service-lifecycle logs.
    var description: String { "SessionSupervisor" }
}
