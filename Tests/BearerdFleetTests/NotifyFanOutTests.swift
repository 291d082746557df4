import BearerdTestSupport
import Foundation
import Logging
import NIOPosix
import PostgresNIO
import Synchronization
import Testing

/// What LISTEN/NOTIFY costs as a fleet grows: N connections LISTEN on the fleet's channel, as N
/// hosts do, and one NOTIFY must reach every one. Prints the time from NOTIFY to the last
/// delivery. `BEARERD_FLEET_LISTENERS` sets N (default 100; docs/fleet.md's figures used 1,000).
@Suite(
    "NOTIFY reaches every listening host",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct NotifyFanOutTests {
    static let listeners = Int(ProcessInfo.processInfo.environment["BEARERD_FLEET_LISTENERS"] ?? "") ?? 100

    @Test func oneNotificationReachesEveryListener() async throws {
        let count = Self.listeners
        let database = try await PostgresServer.start(maxConnections: count + 20)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        do {
            try await self.fanOut(count, database: database, group: group)
        } catch {
            try? await database.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await database.stop()
        try await group.shutdownGracefully()
    }

    func fanOut(_ count: Int, database: PostgresServer, group: MultiThreadedEventLoopGroup) async throws {
        let logger = Logger(label: "fan-out")
        let configuration = PostgresConnection.Configuration(
            host: "127.0.0.1",
            port: database.port,
            username: "bearerd",
            password: "bearerd-pass",
            database: "bearerd",
            tls: .disable
        )
        var connections: [PostgresConnection] = []
        for id in 0..<count + 1 {
            connections.append(
                try await PostgresConnection.connect(
                    on: group.next(),
                    configuration: configuration,
                    id: id,
                    logger: logger
                ).get()
            )
        }
        let arrivals = Arrivals()
        let listening = Arrivals()
        let clock = ContinuousClock()
        let sentAt = SentAt()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for connection in connections.dropFirst() {
                tasks.addTask {
                    try await connection.listen(on: "bearerd_sessions") { notifications in
                        listening.add(.zero)
                        for try await _ in notifications {
                            arrivals.add(clock.now - (sentAt.value.withLock { $0 } ?? clock.now))
                            return
                        }
                    }
                }
            }
            try await waitUntil(.seconds(60)) { listening.count == count }
            sentAt.value.withLock { $0 = clock.now }
            try await connections[0].query("SELECT pg_notify('bearerd_sessions', 'default 2')", logger: logger)
            try await tasks.waitForAll()
        }
        let times = arrivals.values.sorted()
        #expect(times.count == count)
        let median = times[times.count / 2]
        FileHandle.standardError.write(
            Data(
                "NOTIFY fan-out: \(count) listeners, all reached; median \(median.formatted(.units(allowed: [.milliseconds]))), last \(times.last!.formatted(.units(allowed: [.milliseconds])))\n"
                    .utf8
            )
        )
        for connection in connections { try? await connection.close() }
    }

    final class SentAt: Sendable {
        let value = Mutex<ContinuousClock.Instant?>(nil)
    }

    final class Arrivals: Sendable {
        private let state = Mutex<[Duration]>([])
        func add(_ duration: Duration) { self.state.withLock { $0.append(duration) } }
        var count: Int { self.state.withLock { $0.count } }
        var values: [Duration] { self.state.withLock { $0 } }
    }
}
