import BearerdAuth
import BearerdFleet
import BearerdTestSupport
import BearerdTokens
import Foundation
import Logging
import Testing

/// The fleet's lock against everything else that talks to the database: a lock held by another
/// session past `store.postgres.lock_timeout`, a token server slower than that timeout, and a
/// role without privileges on bearerd's tables. Each sends a refresh token twice, or stalls the
/// fleet, with a lock whose outcome is not checked or that any role can take.
@Suite(
    "The fleet's lock against other sessions of the database",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct FleetLockHolderTests {
    /// The key of the advisory lock bearerd took before its lock was a row: held too, so that a
    /// bearerd that still used it is caught by these tests.
    static let advisoryKey = "SELECT pg_advisory_lock(hashtextextended('bearerd:bearerd_sessions:default', 0));"

    static let expired = FleetLockTests.session(access: "access-old", refresh: "refresh-old", expiresIn: -5)

    @Test func aLockHeldByAnotherSessionPastTheTimeoutLetsNoRefreshTokenLeave() async throws {
        try await FleetLockTests.withFleet(hosts: 2, lockTimeout: .seconds(1)) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, hosts, endpoint, _ in
            try await hosts[0].seed(Self.expired)
            let holder = try PostgresSession(database)
            defer { holder.end() }
            try await holder.run(
                Self.advisoryKey
                    + "\nBEGIN;\nSELECT profile FROM bearerd_sessions_lock WHERE profile = 'default' FOR UPDATE;",
                until: "held"
            )
            for host in hosts {
                await #expect(throws: TokenUnavailableError.self) { try await host.manager.token() }
                let problem = await host.manager.status().fleet?.problem
                #expect(problem?.contains("store.postgres.lock_timeout") == true, "\(problem ?? "-")\n\(host.logText)")
            }
            #expect(endpoint.requests.isEmpty)
            try await holder.ended()
            try await waitUntil(.seconds(20), every: .milliseconds(100)) {
                (try? await hosts[1].manager.token().value) == "access-new-0"
            }
            #expect(endpoint.requests.count == 1)
        }
    }

    @Test func aTokenServerSlowerThanTheLockTimeoutGetsTheRefreshTokenOnce() async throws {
        try await FleetLockTests.withFleet(hosts: 2, lockTimeout: .seconds(1)) { _, index in
            try await Task.sleep(for: .seconds(3))
            return FakeTokenEndpoint.tokens(
                access: "access-new-\(index)",
                refresh: "refresh-new-\(index)",
                expiresIn: 3600
            )
        } _: { _, hosts, endpoint, _ in
            try await hosts[0].seed(Self.expired)
            async let first = hosts[0].manager.token()
            try await waitUntil(.seconds(10)) { endpoint.requests.count == 1 }
            // The second host gives up waiting for the lock after 1 s, with the first host's
            // refresh still in flight: it keeps what it has and sends nothing.
            await #expect(throws: TokenUnavailableError.self) { try await hosts[1].manager.token() }
            #expect(endpoint.requests.count == 1)
            #expect(try await first.value == "access-new-0")
            try await waitUntil(.seconds(20), every: .milliseconds(100)) {
                (try? await hosts[1].manager.token().value) == "access-new-0"
            }
            #expect(endpoint.requests.count == 1)
            #expect(endpoint.requests.first.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-old")
        }
    }

    /// The other host's lock ended (a server timeout, a lost connection) while its refresh token
    /// was out: holding the lock no longer proves that host's refresh is over. While its mark is
    /// younger than `inFlightLimit` nobody repeats it: while that host is connected, and after a
    /// PostgreSQL restart too, when it is not connected yet (it reconnects late, with the answer
    /// in hand). After the limit the next host does.
    @Test func aRefreshMarkedInFlightIsNotRepeatedBeforeTheLimitWhetherOrNotItsHostIsConnected() async throws {
        // The limit leaves room for PostgreSQL's restart on a loaded machine (it took more than
        // 4 s in a CI run beside the fleet judge, and the mark had aged out before the check).
        try await FleetLockTests.withFleet(hosts: 2, lockTimeout: .seconds(5), inFlightLimit: .seconds(12)) {
            _,
            index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, hosts, endpoint, _ in
            var marked = FleetLockTests.session(access: "access-old", refresh: "refresh-old", expiresIn: -5)
            try await hosts[0].seed(marked)
            marked.refreshSentAt = Date()
            let markedAt = ContinuousClock.now
            try await hosts[0].mark(marked)
            await #expect(throws: TokenUnavailableError.self) { try await hosts[1].manager.token() }
            #expect(endpoint.requests.isEmpty)
            let problem = await hosts[1].manager.status().fleet?.problem ?? ""
            #expect(problem.contains("host host1 sent the refresh token"), "\(problem)")
            let stopped = ContinuousClock.now
            await hosts[0].stop()
            // PostgreSQL restarts: the marking host is not connected now, as it would not be yet
            // after a restart, and its mark is still younger than the limit: still waited for.
            try await database.stop()
            try await database.start()
            try await waitUntil(.seconds(10), every: .milliseconds(100)) {
                do {
                    _ = try await hosts[1].manager.token()
                    return false
                } catch let error as TokenUnavailableError {
                    return "\(error)".contains("sent the refresh token")
                } catch {
                    return false
                }
            }
            #expect(endpoint.requests.isEmpty, "a host not connected now may still have its answer coming")
            try await waitUntil(.seconds(30), every: .milliseconds(100)) {
                (try? await hosts[1].manager.token().value) == "access-new-0"
            }
            #expect(ContinuousClock.now - stopped >= .seconds(2.5))
            // Not repeated before the limit (12 s, less a second for the clocks' difference).
            #expect(ContinuousClock.now - markedAt >= .seconds(11))
            #expect(endpoint.requests.count == 1)
            #expect(endpoint.requests.first.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-old")
        }
    }

    @Test func aRoleWithoutPrivilegesCanNeitherHoldUpNorMisleadTheFleet() async throws {
        try await FleetLockTests.withFleet(hosts: 1, lockTimeout: .seconds(10)) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, hosts, endpoint, _ in
            try await database.sql("CREATE ROLE intruder LOGIN")
            let intruder = try PostgresSession(database, role: "intruder")
            defer { intruder.end() }
            // Every advisory key bearerd ever used, before the tables exist.
            try await intruder.run(
                Self.advisoryKey + "\nSELECT pg_advisory_lock(hashtextextended('bearerd:schema', 0));",
                until: "keys"
            )
            let clock = ContinuousClock()
            let started = clock.now
            try await hosts[0].seed(Self.expired)
            #expect(clock.now - started < .seconds(3))
            // The lock row, as far as PostgreSQL lets this role try.
            try await intruder.run(
                """
                SELECT profile FROM bearerd_sessions_lock FOR UPDATE;
                BEGIN;
                LOCK TABLE bearerd_sessions_lock IN ACCESS EXCLUSIVE MODE;
                ROLLBACK;
                """,
                until: "tried"
            )
            #expect(intruder.text.contains("permission denied for table bearerd_sessions_lock"))
            let listener = FleetService(store: hosts[0].store, manager: hosts[0].manager, logger: .init(label: "l"))
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            let refreshed = clock.now
            #expect(try await hosts[0].manager.token().value == "access-new-0")
            #expect(clock.now - refreshed < .seconds(3))
            // A notification anyone may send makes the host read the row again, nothing more.
            try await intruder.run("NOTIFY bearerd_sessions, 'default 999';", until: "notified")
            try await Task.sleep(for: .milliseconds(500))
            #expect(await hosts[0].manager.status().fleet?.version == 2)
            #expect(try await hosts[0].manager.token().value == "access-new-0")
            #expect(endpoint.requests.count == 1)
        }
    }
}
