import BearerdAuth
import BearerdFleet
import BearerdTestSupport
import BearerdTokens
import Foundation
import InMemoryLogging
import Logging
import Testing

/// Any role that can connect to the fleet's database may send NOTIFY on its channel. A flood of
/// them must cost the database a bounded rate of reads, not one read per notification.
@Suite(
    "A flood of notifications",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct NotifyFloodTests {
    @Test func isReadAtMostTenTimesASecond() async throws {
        try await FleetLockTests.withFleet(hosts: 1) { _, _ in
            FakeTokenEndpoint.tokens(access: "access-new", refresh: "refresh-new", expiresIn: 3600)
        } _: { database, fleet, _, _ in
            let session = FleetLockTests.session(access: "access-old", refresh: "refresh-old", expiresIn: 3600)
            try await fleet[0].seed(session)
            var handler = InMemoryLogHandler()
            handler.logLevel = .debug
            let captured = handler
            let listener = FleetService(
                store: fleet[0].store,
                manager: fleet[0].manager,
                logger: Logger(label: "listener") { _ in captured }
            )
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await waitUntil(.seconds(10)) { fleet[0].manager.currentToken()?.value == "access-old" }
            let reads = { captured.entries.filter { $0.message.description == "reading the fleet's row" }.count }
            let before = reads()
            // Each payload its own: PostgreSQL folds equal notifications of one transaction.
            let started = ContinuousClock.now
            _ = try await database.sql(
                "SELECT pg_notify('bearerd_sessions', 'default ' || n) FROM generate_series(1, 5000) AS n;"
            )
            try await Task.sleep(for: .seconds(2))
            let elapsed = ContinuousClock.now - started
            let flood = reads() - before
            // A read per notification was 5,000; one per 100 ms is what may happen.
            #expect(flood >= 1, "the notifications woke a read")
            #expect(Double(flood) <= elapsed / FleetService.notifySpacing + 2, "\(flood) reads in \(elapsed)")
        }
    }
}
