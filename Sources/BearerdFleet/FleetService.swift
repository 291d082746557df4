import BearerdTokens
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle

/// Runs the fleet's connection pool, LISTENs for versions other hosts write and hands them to the
/// token manager at once; reads the row every `store.postgres.poll_interval` too, in case a
/// notification was lost (and the manager's own refresh timer reads it under the lock).
///
/// First in the daemon's group, so it stops last: after the token manager has settled.
package struct FleetService: Service {
    let store: PostgresSessionStore
    let manager: TokenManager
    let logger: Logger

    package init(store: PostgresSessionStore, manager: TokenManager, logger: Logger) {
        self.store = store
        self.manager = manager
        self.logger = logger
    }

    package func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.store.run() }
            group.addTask { await self.listen() }
            group.addTask { await self.poll() }
            // Nothing to drain: the token manager has settled before this is told to stop (the
            // pool, a Service itself, closes on the same signal).
            try? await gracefulShutdown()
            group.cancelAll()
        }
    }

    /// Notifications wake one reader that reads the row at most once per this spacing: any role
    /// that can connect may send NOTIFY on the channel, and a flood of them costs the database
    /// ten reads a second, not one per notification (nor a queue of them in memory).
    package static let notifySpacing = Duration.milliseconds(100)

    /// One connection LISTENs; notifications for this profile read the row (``notifySpacing``).
    private func listen() async {
        var failures = 0
        while !Task.isCancelled {
            do {
                try await self.store.withConnection { connection in
                    try await connection.listen(on: self.store.channel) { notifications in
                        try await self.coalesce(notifications)
                    }
                }
            } catch is CancellationError {
                return
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                failures += 1
                if failures == 1 {
                    self.logger.warning(
                        "lost the fleet's notifications; reconnecting (the row is read every store.postgres.poll_interval meanwhile)",
                        metadata: ["error": "\(FleetStoreError.describe(error))"]
                    )
                }
            }
            try? await Task.sleep(for: .seconds(min(10, failures + 1)))
            if failures > 0, !Task.isCancelled { failures = min(failures, 9) }
        }
    }

    /// Reads the row once now (anything written before LISTEN took effect) and again after
    /// notifications, however many came while a read was running or spaced.
    private func coalesce(_ notifications: PostgresNotificationSequence) async throws {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in wakes {
                    await self.sync()
                    try? await Task.sleep(for: Self.notifySpacing)
                }
            }
            wake.yield()
            do {
                for try await notification in notifications
                where notification.payload.hasPrefix(self.store.profile + " ") {
                    wake.yield()
                }
            } catch {
                wake.finish()
                throw error
            }
            wake.finish()
        }
    }

    private func poll() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: self.store.settings.pollInterval)
            if Task.isCancelled { return }
            await self.sync()
        }
    }

    /// Reads the row and hands it to the manager, which adopts a newer version.
    package func sync() async {
        self.logger.debug("reading the fleet's row")
        do {
            let row = try await self.store.read()
            Gauge(label: "bearerd_fleet_store_up", dimensions: self.manager.sessionDimensions).record(1)
            Gauge(label: "bearerd_fleet_session_version", dimensions: self.manager.sessionDimensions)
                .record(row.version)
            await self.manager.adoptShared(row)
        } catch {
            Gauge(label: "bearerd_fleet_store_up", dimensions: self.manager.sessionDimensions).record(0)
            await self.manager.sharedStoreUnavailable("\(error)")
        }
    }
}
