import BearerdConfig
import BearerdFleet
import BearerdStore
import BearerdTestSupport
import BearerdTokens
import Foundation
import InMemoryLogging
import Logging

/// One host of a fleet in this process: its own pool to the shared database, its own token
/// manager; the token endpoint is shared, so a test counts the fleet's requests.
struct FleetHost: Sendable {
    let store: PostgresSessionStore
    let manager: TokenManager
    let logs = InMemoryLogHandler()
    let pool: Task<Void, Never>

    static let source = OAuth2Source(
        settings: .init(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: Secret("client-secret-value-0042")
        )
    )

    init(
        _ name: String,
        database: PostgresServer,
        directory: TemporaryDirectory,
        endpoint: FakeTokenEndpoint,
        keyFile: String,
        table: String = "bearerd_sessions",
        connectTimeout: Duration = .seconds(5),
        lockTimeout: Duration = .seconds(10),
        tls: BearerdConfiguration.Store.Postgres.TLSMode? = nil,
        caFile: String? = nil,
        source: any TokenSource = Self.source,
        proofKey: (any ProofKey)? = nil,
        inFlightLimit: Duration = RefreshPolicy().inFlightLimit
    ) throws {
        var handler = self.logs
        handler.logLevel = .debug
        let captured = handler
        let logger = Logger(label: name) { _ in captured }
        let settings = BearerdConfiguration.Store.Postgres(
            urlFile: try database.writeURL(in: directory, name: "url-\(name)"),
            tls: tls,
            caFile: caFile,
            table: table,
            hostName: name,
            lockTimeout: lockTimeout,
            pollInterval: .seconds(30),
            connectTimeout: connectTimeout
        )
        self.store = try PostgresSessionStore(settings, profile: "default", key: .keyFile(keyFile), logger: logger)
        let store = self.store
        self.pool = Task { await store.run() }
        var policy = RefreshPolicy()
        policy.inFlightLimit = inFlightLimit
        self.manager = TokenManager(
            source: source,
            transport: endpoint,
            store: MemoryTokenStore(),
            policy: policy,
            logger: logger,
            fleet: self.store,
            host: name,
            proofKey: proofKey,
            random: { 0.5 }
        )
    }

    var logText: String {
        self.logs.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n")
    }

    func stop() async {
        self.pool.cancel()
        await self.pool.value
    }

    /// Reads the row under the lock, changing nothing: the host then has connections to the
    /// database, as a running host does.
    func connect() async throws {
        _ = try await self.store.withRefreshLock { row, _ in row.version }
    }

    /// Writes `session` into the fleet's row as a new version, as a host that refreshed would.
    func seed(_ session: StoredSession) async throws {
        _ = try await self.store.withRefreshLock { row, lease in
            try await lease.write(StoredTokens(user: session), announce: true, floor: 0, expected: row.version)
        }
    }
}

extension FleetHost {
    /// Marks `session`'s refresh in flight in the fleet's row, as a host does before it sends the
    /// refresh token, and goes no further (as if its lock were then lost, or it died).
    func mark(_ session: StoredSession) async throws {
        struct Stopped: Error {}
        do {
            _ = try await self.store.withRefreshLock { row, lease -> Int64 in
                _ = try await lease.write(StoredTokens(user: session), announce: false, floor: 0, expected: row.version)
                throw Stopped()
            }
        } catch is Stopped {}
    }
}

/// A fresh store key in `directory`.
func makeKey(in directory: TemporaryDirectory, name: String = "store.key") throws -> String {
    let path = directory.path + "/" + name
    try StoreKey.generate(to: path)
    return path
}
