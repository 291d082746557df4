import BearerdAuth
import BearerdFleet
import BearerdTestSupport
import BearerdTokens
import Foundation
import Logging
import Testing

/// The fleet's lock, adoption and versions, against a real PostgreSQL (`scripts/postgres`).
@Suite(
    "One session across hosts through PostgreSQL",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct FleetLockTests {
    /// Each test has a database of its own.
    static func withFleet(
        hosts: Int,
        lockTimeout: Duration = .seconds(10),
        inFlightLimit: Duration = RefreshPolicy().inFlightLimit,
        directory: TemporaryDirectory? = nil,
        source: any TokenSource = FleetHost.source,
        respond: @escaping FakeTokenEndpoint.Respond,
        _ body: (PostgresServer, [FleetHost], FakeTokenEndpoint, TemporaryDirectory) async throws -> Void
    ) async throws {
        let database = try await PostgresServer.start()
        let directory = try directory ?? TemporaryDirectory()
        let key = try makeKey(in: directory)
        let endpoint = FakeTokenEndpoint(respond)
        var fleet: [FleetHost] = []
        do {
            for index in 1...hosts {
                fleet.append(
                    try FleetHost(
                        "host\(index)",
                        database: database,
                        directory: directory,
                        endpoint: endpoint,
                        keyFile: key,
                        lockTimeout: lockTimeout,
                        source: source,
                        inFlightLimit: inFlightLimit
                    )
                )
            }
            try await body(database, fleet, endpoint, directory)
        } catch {
            for host in fleet { await host.stop() }
            try? await database.stop()
            throw error
        }
        for host in fleet { await host.stop() }
        try await database.stop()
    }

    static func session(
        access: String,
        refresh: String,
        expiresIn: TimeInterval,
        age: TimeInterval = 30
    ) -> StoredSession {
        let now = Date()
        return StoredSession(
            refreshToken: Secret(refresh),
            accessToken: BearerToken(access),
            accessExpiresAt: now.addingTimeInterval(expiresIn),
            receivedAt: now.addingTimeInterval(-age)
        )
    }

    @Test func hostsRacingForOneExpirySendTheRefreshTokenOnce() async throws {
        try await Self.withFleet(hosts: 3) { _, index in
            try await Task.sleep(for: .milliseconds(200))
            return FakeTokenEndpoint.tokens(
                access: "access-new-\(index)",
                refresh: "refresh-new-\(index)",
                expiresIn: 3600
            )
        } _: { database, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            let tokens = try await withThrowingTaskGroup(of: String.self) { group in
                for host in fleet {
                    for _ in 0..<4 {
                        group.addTask { try await host.manager.token().value }
                    }
                }
                return try await group.reduce(into: Set<String>()) { $0.insert($1) }
            }
            #expect(endpoint.requests.count == 1)
            #expect(endpoint.requests.first.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-old")
            #expect(tokens == ["access-new-0"])
            #expect(try await database.sql("SELECT version FROM bearerd_sessions") == "2")
            // The two that waited adopted what the first wrote.
            let adopted = fleet.filter { $0.logText.contains("adopted the fleet's session") }.count
            #expect(adopted == 2)
        }
    }

    @Test func aStale401NeverRefreshesWhatAnotherHostJustRefreshed() async throws {
        try await Self.withFleet(hosts: 2) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { _, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: 3600))
            // Both hosts use the same token (no listener runs: host 2 is not told of changes).
            #expect(try await fleet[0].manager.token().value == "access-old")
            #expect(try await fleet[1].manager.token().value == "access-old")
            #expect(endpoint.requests.isEmpty)
            // Host 1's request is refused: it refreshes.
            let first = await fleet[0].manager.upstreamRejected(BearerToken("access-old"))
            #expect(first?.value == "access-new-0")
            // Host 2's request with the same old token is refused a moment later: it adopts.
            let second = await fleet[1].manager.upstreamRejected(BearerToken("access-old"))
            #expect(second?.value == "access-new-0")
            #expect(endpoint.requests.count == 1)
        }
    }

    @Test func aNotificationHandsTheNewTokenToEveryHostAtOnce() async throws {
        try await Self.withFleet(hosts: 2) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { _, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: 3600))
            let listener = FleetService(
                store: fleet[1].store,
                manager: fleet[1].manager,
                logger: .init(label: "listener")
            )
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await waitUntil(.seconds(10)) { fleet[1].manager.currentToken()?.value == "access-old" }
            _ = await fleet[0].manager.upstreamRejected(BearerToken("access-old"))
            try await waitUntil(.seconds(5)) { fleet[1].manager.currentToken()?.value == "access-new-0" }
            #expect(endpoint.requests.count == 1)
            let status = await fleet[1].manager.status()
            #expect(status.fleet?.writtenBy == "host1")
            #expect(status.fleet?.version == 2)
        }
    }

    @Test func aLogoutThroughOneHostEndsTheSessionOnEvery() async throws {
        try await Self.withFleet(hosts: 2) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: 3600))
            #expect(try await fleet[0].manager.token().value == "access-old")
            let listener = FleetService(
                store: fleet[1].store,
                manager: fleet[1].manager,
                logger: .init(label: "listener")
            )
            let listening = Task { try await listener.run() }
            defer { listening.cancel() }
            try await waitUntil(.seconds(10)) { fleet[1].manager.currentToken()?.value == "access-old" }
            let result = await fleet[0].manager.logOut()
            #expect(result.loggedOut)
            try await waitUntil(.seconds(5)) { fleet[1].manager.currentToken() == nil }
            #expect(await fleet[1].manager.status().state == .loggedOut)
            #expect(try await database.sql("SELECT version FROM bearerd_sessions") == "2")
            #expect(endpoint.requests.isEmpty)
        }
    }

    @Test func aRefreshMarkedInFlightIsRepeatedAtOnceByTheNextHost() async throws {
        try await Self.withFleet(hosts: 2) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, fleet, endpoint, _ in
            // A host marked its refresh in flight, then died before writing the answer, while the
            // database stayed up: its refresh is over (it cannot write the answer), and the next
            // host repeats it at once, inside the server's grace period for the refresh token.
            var marked = Self.session(access: "access-old", refresh: "refresh-old", expiresIn: 3600)
            try await fleet[0].seed(marked)
            // The next host was connected before the mark, as a running host is: the database
            // did not go away meanwhile.
            try await fleet[1].connect()
            marked.refreshSentAt = Date()
            try await fleet[0].mark(marked)
            await fleet[0].stop()
            // Its session ended with it; under load PostgreSQL can take seconds to see that, and
            // until then the lock is still held (what the lock timeout covers, not this test).
            let open = "SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'"
            try await waitUntil(.seconds(30), every: .milliseconds(50)) { (try? await database.sql(open)) == "0" }
            // The token is still valid, but the next host refreshes at once, with the same
            // refresh token (inside the server's grace period for it).
            _ = try await fleet[1].manager.token()
            // "At once": well before the fixture's lock timeout (10 s) could have passed.
            try await waitUntil(.seconds(8)) { endpoint.requests.count == 1 }
            #expect(endpoint.requests.first.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-old")
            try await waitUntil(.seconds(8)) { fleet[1].manager.currentToken()?.value == "access-new-0" }
        }
    }

    @Test func aRefreshThatEndedWithoutAnAnswerHoldsNoOtherHostBack() async throws {
        struct Refused: Error {}
        try await Self.withFleet(hosts: 2) { _, index in
            // The token server is down for the first attempt (connection refused), then back.
            if index == 0 { throw Refused() }
            return FakeTokenEndpoint.tokens(
                access: "access-new-\(index)",
                refresh: "refresh-new-\(index)",
                expiresIn: 3600
            )
        } _: { database, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            try await fleet[1].connect()
            // The first host's refresh fails; it backs off and stays connected, as a running host
            // does while the token server is down.
            await #expect(throws: TokenUnavailableError.self) { try await fleet[0].manager.token() }
            #expect(endpoint.requests.count == 1)
            #expect(try await database.sql("SELECT coalesce(refresh_started_by, '-') FROM bearerd_sessions") == "-")
            // The token server is back: the next host refreshes at once, instead of waiting the
            // in-flight limit (35 s) for a request that ended.
            let started = ContinuousClock.now
            #expect(try await fleet[1].manager.token().value == "access-new-1")
            #expect(ContinuousClock.now - started < .seconds(5))
            #expect(endpoint.requests.last.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-old")
        }
    }

    @Test func aRowThatWentBackInTimeGetsTheNewerSessionBackInsteadOfAReusedRefreshToken() async throws {
        try await Self.withFleet(hosts: 1) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 2)
        } _: { database, fleet, endpoint, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            try await database.sql("CREATE TABLE backup AS SELECT * FROM bearerd_sessions")
            #expect(try await fleet[0].manager.token().value == "access-new-0")
            // A failover to a replica that had not received the last commit.
            try await database.sql(
                "UPDATE bearerd_sessions s SET version = b.version, sealed = b.sealed FROM backup b WHERE s.profile = b.profile"
            )
            try await Task.sleep(for: .seconds(2))
            #expect(try await fleet[0].manager.token().value == "access-new-1")
            #expect(endpoint.requests.count == 2)
            #expect(endpoint.requests.last.map(FakeTokenEndpoint.form)?["refresh_token"] == "refresh-new-0")
            #expect(fleet[0].logText.contains("the fleet's row is older than the session this host adopted"))
            #expect(try await database.sql("SELECT version > 2 FROM bearerd_sessions") == "t")
        }
    }

    @Test func aDatabaseThatStopsAnsweringHoldsNoRefreshForEver() async throws {
        try await Self.withFleet(hosts: 1) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, fleet, endpoint, directory in
            let host = try FleetHost(
                "quick",
                database: database,
                directory: directory,
                endpoint: endpoint,
                keyFile: directory.path + "/store.key",
                connectTimeout: .seconds(1)
            )
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            _ = try await host.store.read()
            // Connections stay open, but nothing answers: no reset, as behind a partition.
            try await database.pause()
            let clock = ContinuousClock()
            let started = clock.now
            await #expect(throws: TokenUnavailableError.self) { try await host.manager.token() }
            #expect(clock.now - started < .seconds(10))
            let problem = await host.manager.status().fleet?.problem
            #expect(problem?.contains("PostgreSQL did not answer") == true, "\(problem ?? "-")")
            try await database.pause(false)
            try await waitUntil(.seconds(20), every: .milliseconds(200)) {
                (try? await host.manager.token().value) == "access-new-0"
            }
            #expect(endpoint.requests.count == 1)
            await host.stop()
        }
    }

    @Test func aHostWithAnotherKeySaysSoAndChangesNothing() async throws {
        try await Self.withFleet(hosts: 1) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, fleet, endpoint, directory in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            let before = try await database.sql("SELECT version, md5(sealed) FROM bearerd_sessions")
            let stranger = try FleetHost(
                "stranger",
                database: database,
                directory: directory,
                endpoint: endpoint,
                keyFile: try makeKey(in: directory, name: "other.key")
            )
            defer { stranger.pool.cancel() }
            await #expect(throws: TokenUnavailableError.self) { try await stranger.manager.token() }
            let status = await stranger.manager.status()
            #expect(status.detail?.contains("every host of the fleet needs the same store.key_file") == true)
            #expect(endpoint.requests.isEmpty)
            #expect(try await database.sql("SELECT version, md5(sealed) FROM bearerd_sessions") == before)
            await stranger.stop()
        }
    }

    @Test func theTableIsCreatedOnceAndNoSecretReachesTheLogOrTheDatabaseInClear() async throws {
        try await Self.withFleet(hosts: 2) { _, index in
            FakeTokenEndpoint.tokens(access: "access-new-\(index)", refresh: "refresh-new-\(index)", expiresIn: 3600)
        } _: { database, fleet, _, _ in
            try await fleet[0].seed(Self.session(access: "access-old", refresh: "refresh-old", expiresIn: -5))
            _ = try await fleet[1].manager.token()
            _ = try await fleet[0].manager.token()
            let created = fleet.filter { $0.logText.contains("created the fleet's table") }.count
            #expect(created == 1)
            #expect(try await database.sql("SELECT schema_version, written_by FROM bearerd_sessions") == "1|host2")
            let row = try await database.sql("SELECT encode(sealed, 'escape') FROM bearerd_sessions")
            let logs = fleet.map(\.logText).joined(separator: "\n")
            for secret in [
                "access-old", "refresh-old", "access-new", "refresh-new", "bearerd-pass", "client-secret-value",
            ] {
                #expect(!row.contains(secret), "\(secret) is in the row in clear")
                #expect(!logs.contains(secret), "\(secret) is in a log line")
            }
        }
    }
}

extension FleetLockTests {
    /// Hosts of a fleet started together (a deployment, a reboot) each create the missing tables;
    /// whichever answer PostgreSQL gives the ones that lose that race (the table exists, its row
    /// type exists, a duplicate key in the catalog), each host starts without waiting a retry.
    @Test func hostsCreatingTheTablesAtOnceAllStart() async throws {
        let database = try await PostgresServer.start()
        let directory = try TemporaryDirectory()
        let key = try makeKey(in: directory)
        let endpoint = FakeTokenEndpoint { _, _ in FakeTokenEndpoint.tokens(access: "unused") }
        var all: [FleetHost] = []
        do {
            for round in 1...8 {
                let hosts = try (1...6).map {
                    try FleetHost(
                        "host\($0)",
                        database: database,
                        directory: directory,
                        endpoint: endpoint,
                        keyFile: key,
                        table: "bearerd_race_\(round)"
                    )
                }
                all += hosts
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for host in hosts { group.addTask { _ = try await host.store.read() } }
                    try await group.waitForAll()
                }
                // Each of the two tables (the session's and the lock's) is created by one host.
                let created = hosts.map { $0.logText.components(separatedBy: "created the fleet's table").count - 1 }
                #expect(created.reduce(0, +) == 2, "round \(round): \(created) creations")
            }
        } catch {
            for host in all { await host.stop() }
            try? await database.stop()
            throw error
        }
        for host in all { await host.stop() }
        try await database.stop()
    }

    /// Something else of the table's name (a view, a composite type) is not taken for the table,
    /// and the error says which key to change.
    @Test func aViewOrATypeOfTheTablesNameIsRefusedNamingTheKey() async throws {
        try await Self.withFleet(hosts: 1) { _, _ in
            FakeTokenEndpoint.tokens(access: "unused")
        } _: {
            database,
            _,
            endpoint,
            directory in
            // bearerd's own role owns them: the owner check alone would let them through.
            try await database.sql("CREATE VIEW fleet_view AS SELECT 1 AS one")
            try await database.sql("ALTER VIEW fleet_view OWNER TO bearerd")
            try await database.sql("CREATE TYPE fleet_type AS (one int)")
            try await database.sql("ALTER TYPE fleet_type OWNER TO bearerd")
            for name in ["fleet_view", "fleet_type"] {
                let host = try FleetHost(
                    "stray-\(name)",
                    database: database,
                    directory: directory,
                    endpoint: endpoint,
                    keyFile: try makeKey(in: directory, name: "\(name).key"),
                    table: name
                )
                do {
                    _ = try await host.store.read()
                    Issue.record("\(name) was taken for the table")
                } catch {
                    #expect(
                        "\(error)".contains("store.postgres.table") && "\(error)".contains("not bearerd's table"),
                        "\(error)"
                    )
                }
                await host.stop()
            }
        }
    }
}
