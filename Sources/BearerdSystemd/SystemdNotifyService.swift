import Logging
import ServiceLifecycle

/// Talks to systemd under `Type=notify` (`sd_notify(3)`): `READY=1` once the proxy listens and
/// the store is loaded, `STATUS=` with the token's state, `WATCHDOG=1` at a quarter of `WatchdogSec=`,
/// `RELOADING=1` + `MONOTONIC_USEC=` then `READY=1` around a reload, `STOPPING=1` at shutdown.
/// Without `$NOTIFY_SOCKET` it does nothing but wait for shutdown.
///
/// A `WATCHDOG=1` vouches for the daemon, not for this task: each is sent only after `alive`
/// says the parts that serve requests still run (every event loop answered), so a daemon whose
/// loop is stuck stops pinging and systemd restarts it.
package struct SystemdNotifyService: Service {
    /// What a reload tells this service.
    package enum ReloadEvent: Sendable {
        case started
        case finished
    }

    private let socket: NotifySocket?
    private let readiness: Readiness
    private let watchdog: Duration?
    private let status: @Sendable () async -> String
    private let alive: @Sendable (Duration) async -> Bool
    private let reloads: AsyncStream<ReloadEvent>
    private let statusInterval: Duration
    private let logger: Logger

    /// - Parameters:
    ///   - environment: `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` are read from it.
    ///   - alive: asked before each `WATCHDOG=1`, with how long it may take to answer; `false`
    ///     skips that ping.
    ///   - status: the `STATUS=` text, asked for at readiness and then every `statusInterval`.
    package init(
        environment: [String: String],
        processID: Int32,
        readiness: Readiness,
        reloads: AsyncStream<ReloadEvent>,
        statusInterval: Duration = .seconds(10),
        logger: Logger,
        alive: @escaping @Sendable (Duration) async -> Bool = { _ in true },
        status: @escaping @Sendable () async -> String
    ) {
        self.socket = NotifySocket(environment: environment)
        self.readiness = readiness
        self.reloads = reloads
        self.statusInterval = statusInterval
        self.logger = logger
        self.status = status
        self.alive = alive
        // sd_watchdog_enabled(3): WATCHDOG_USEC, for this process when WATCHDOG_PID says so.
        if let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == processID }) ?? true
        {
            self.watchdog = .microseconds(Int64(min(usec, UInt64(Int64.max))))
        } else {
            self.watchdog = nil
        }
    }

    package func run() async throws {
        guard let socket = self.socket else {
            try? await gracefulShutdown()
            return
        }
        await cancelWhenGracefulShutdown {
            guard await self.readiness.wait() else { return }
            let first = await self.status()
            socket.send("READY=1\nSTATUS=\(first)")
            self.logger.debug("told systemd: ready", metadata: ["status": "\(first)"])
            await withDiscardingTaskGroup { group in
                if let watchdog = self.watchdog {
                    group.addTask { await self.pingWatchdog(socket, every: watchdog / 4) }
                }
                group.addTask {
                    var last = first
                    while (try? await Task.sleep(for: self.statusInterval)) != nil {
                        let current = await self.status()
                        if current != last {
                            socket.send("STATUS=\(current)")
                            last = current
                        }
                    }
                }
                group.addTask {
                    for await event in self.reloads {
                        switch event {
                        case .started:
                            socket.send("RELOADING=1\nMONOTONIC_USEC=\(NotifySocket.monotonicMicroseconds())")
                        case .finished:
                            socket.send("READY=1\nSTATUS=\(await self.status())")
                        }
                    }
                }
            }
        }
        socket.send("STOPPING=1")
    }

    /// `WATCHDOG=1` every `interval` (a quarter of `WatchdogSec=`) while `alive` answers yes
    /// within half of it: one slow answer under load skips one ping, which systemd tolerates;
    /// a loop that stays stuck is restarted.
    private func pingWatchdog(_ socket: NotifySocket, every interval: Duration) async {
        var silent = false
        while (try? await Task.sleep(for: interval)) != nil {
            if await self.alive(interval / 2) {
                socket.send("WATCHDOG=1")
                if silent { self.logger.notice("the event loops answer again; watchdog pings resumed") }
                silent = false
            } else if !silent {
                silent = true
                self.logger.critical(
                    "an event loop has not answered for \(interval / 2); no longer telling systemd the daemon is alive (it restarts it after WatchdogSec=)"
                )
            }
        }
    }
}

extension SystemdNotifyService: CustomStringConvertible {
    /// What service-lifecycle logs: the name, not a dump of its state.
    package var description: String { "SystemdNotifyService" }
}
