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

    private let initial: [DaemonSession]
    private let logger: Logger
    private let commands: AsyncStream<Command>
    private let enqueue: AsyncStream<Command>.Continuation
    private let running = Mutex<[String: Running]>([:])

    init(sessions: [DaemonSession], logger: Logger) {
        self.initial = sessions
        self.logger = logger
        (self.commands, self.enqueue) = AsyncStream.makeStream(of: Command.self)
    }

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for session in self.initial {
                let group = self.register(session)
                tasks.addTask {
                    defer { self.ended(session.name) }
                    do {
                        try await group.run()
                    } catch {
                        // The daemon stops, as when any of its parts fails.
                        self.enqueue.finish()
                        throw error
                    }
                }
            }
            // The sessions' groups hear a graceful shutdown themselves; the commands end with it.
            await withGracefulShutdownHandler {
                for await command in self.commands {
                    switch command {
                    case .start(let session, let started):
                        let group = self.register(session)
                        tasks.addTask {
                            defer { self.ended(session.name) }
                            do {
                                try await group.run()
                                started(.failure(StoppingError()))
                            } catch {
                                self.logger.error(
                                    "a session the reload added stopped on an error",
                                    metadata: ["session": "\(session.name)", "error": "\(error)"]
                                )
                                started(.failure(error))
                            }
                            // Whoever waits for its listeners hears it ended first.
                            session.up.mark(DaemonSession.listening)
                        }
                        tasks.addTask {
                            if await session.up.wait() { started(.success(())) }
                        }
                    case .stop(let name, let stopped):
                        let group = self.running.withLock { running -> ServiceGroup? in
                            guard running[name] != nil else { return nil }
                            running[name]?.waiters.append(stopped)
                            return running[name]?.group
                        }
                        guard let group else {
                            stopped()
                            continue
                        }
                        await group.triggerGracefulShutdown()
                    }
                }
            } onGracefulShutdown: {
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

    private func register(_ session: DaemonSession) -> ServiceGroup {
        let group = ServiceGroup(
            configuration: .init(
                services: session.services.map { .init(service: $0) },
                gracefulShutdownSignals: [],
                cancellationSignals: [],
                logger: self.logger
            )
        )
        self.running.withLock { $0[session.name] = Running(group: group) }
        return group
    }

    private func ended(_ name: String) {
        let waiters = self.running.withLock { $0.removeValue(forKey: name)?.waiters ?? [] }
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
