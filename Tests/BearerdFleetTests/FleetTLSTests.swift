import BearerdConfig
import BearerdFleet
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// `store.postgres.sslmode` against a PostgreSQL that serves TLS with a certificate from a CA of
/// the test's own.
@Suite(
    "The fleet's store over TLS",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct FleetTLSTests {
    @Test func verifyFullChecksTheCertificateAndRequireEncryptsWithoutIt() async throws {
        let database = try await PostgresServer.start(tls: true)
        let directory = try TemporaryDirectory()
        let key = try makeKey(in: directory)
        let endpoint = FakeTokenEndpoint { _, _ in FakeTokenEndpoint.tokens(access: "a", refresh: "r") }
        let caFile = try #require(database.certificates?.caFile)
        let checked = try FleetHost(
            "checked",
            database: database,
            directory: directory,
            endpoint: endpoint,
            keyFile: key,
            tls: .verifyFull,
            caFile: caFile
        )
        let unchecked = try FleetHost(
            "unchecked",
            database: database,
            directory: directory,
            endpoint: endpoint,
            keyFile: key,
            tls: .require
        )
        // The system's roots do not know the test's CA.
        let untrusted = try FleetHost(
            "untrusted",
            database: database,
            directory: directory,
            endpoint: endpoint,
            keyFile: key,
            connectTimeout: .seconds(2),
            tls: .verifyFull
        )
        #expect(try await checked.store.read().version == 0)
        #expect(try await unchecked.store.read().version == 0)
        await #expect(throws: FleetStoreError.self) { try await untrusted.store.read() }
        let encrypted = try await database.sql(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) WHERE ssl AND application_name LIKE 'bearerd %'"
        )
        #expect((Int(encrypted) ?? 0) >= 2, "the connections are not encrypted")
        for host in [checked, unchecked, untrusted] { await host.stop() }
        try await database.stop()
    }
}
