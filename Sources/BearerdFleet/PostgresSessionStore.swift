import BearerdConfig
import BearerdStore
import BearerdTokens
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Synchronization

/// The fleet's session in one PostgreSQL row: the same sealed bytes as the file store (the store
/// key is the fleet's shared credential), a version that grows with every change, and a session
/// advisory lock per row as the fleet's one refresh lock. The lock belongs to a connection, so it
/// is held across commits — the refresh-in-flight mark is committed before the refresh token
/// leaves — and ends with the connection if the host dies.
package final class PostgresSessionStore: SharedSessionStore {
    let client: PostgresClient
    private let sealer: StoreSealer
    let profile: String
    /// Validated by the config (``BearerdConfiguration/Store/Postgres/isValidTable(_:)``).
    let table: String
    /// The LISTEN/NOTIFY channel: the table's name.
    let channel: String
    let host: String
    let settings: BearerdConfiguration.Store.Postgres
    let logger: Logger
    private let prepared = Mutex(false)
    private let running = Mutex(false)
    static let schemaVersion: Int32 = 1

    /// Reads `store.postgres.url_file` and the key; connects only once ``run()`` runs.
    package init(
        _ settings: BearerdConfiguration.Store.Postgres,
        profile: String,
        key: StoreKey,
        logger: Logger
    ) throws(FleetStoreError) {
        let url = try PostgresURL.read(settings.urlFile)
        self.settings = settings
        self.profile = profile
        self.table = settings.table
        self.channel = settings.table.replacingOccurrences(of: ".", with: "_")
        self.host = settings.hostName
        self.logger = logger
        do {
            self.sealer = try StoreSealer(
                key: key,
                profile: profile,
                place: "the fleet's row \"\(profile)\" in the PostgreSQL table \(settings.table)"
            )
        } catch {
            throw FleetStoreError(code: .config, description: "store.key_file: \(error)", underlying: error)
        }
        let base = logger.handler
        self.client = PostgresClient(
            configuration: try Self.configuration(url, settings),
            backgroundLogger: Logger(label: logger.label) { _ in PoolLogHandler(base: base) }
        )
    }

    /// The pool: it must run for the store to answer; it ends when the task is cancelled. A second
    /// caller (a verb's in-process engine and a listener, say) waits for cancellation instead.
    package func run() async {
        let first = self.running.withLock { running in
            defer { running = true }
            return !running
        }
        guard first else {
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
            return
        }
        await self.client.run()
    }

    // MARK: SharedSessionStore

    package func read() async throws -> SharedSession {
        try await self.prepare()
        return try await self.withConnection { connection in
            try await self.answering(connection, "a read of the row") { try await self.read(on: connection) }
        }
    }

    package func withRefreshLock<Result: Sendable>(
        _ body: @escaping @Sendable (SharedSession, any SharedSessionLease) async throws -> Result
    ) async throws -> Result {
        try await self.prepare()
        return try await self.withConnection { connection in
            try await self.lock(on: connection)
            let outcome: Swift.Result<Result, any Error>
            do {
                let row = try await self.answering(connection, "a read of the row") {
                    try await self.read(on: connection)
                }
                outcome = .success(try await body(row, Lease(store: self, connection: connection)))
            } catch {
                outcome = .failure(error)
            }
            do {
                try await self.answering(connection, "the unlock") {
                    _ = try await connection.query(
                        "SELECT pg_advisory_unlock(hashtextextended(\(self.lockKey), 0))",
                        logger: self.logger
                    )
                }
            } catch {
                // A connection that may still hold the lock goes: closing it releases the lock.
                self.logger.warning(
                    "cannot release the fleet's refresh lock; closing its connection",
                    metadata: ["error": "\(FleetStoreError.describe(error))"]
                )
                try? await connection.close()
            }
            return try outcome.get()
        }
    }

    /// The lock, waiting at most `store.postgres.lock_timeout` for the host that holds it.
    private func lock(on connection: PostgresConnection) async throws {
        let milliseconds =
            "\(self.settings.lockTimeout.components.seconds * 1000 + self.settings.lockTimeout.components.attoseconds / 1_000_000_000_000_000)"
        do {
            // A database that does not answer at all is found here, before the long wait below.
            try await self.answering(connection, "a statement") {
                _ = try await connection.query(
                    "SELECT set_config('lock_timeout', \(milliseconds), false)",
                    logger: self.logger
                )
            }
            try await self.answering(connection, within: self.settings.lockTimeout + self.statementLimit, "the lock") {
                _ = try await connection.query(
                    "SELECT pg_advisory_lock(hashtextextended(\(self.lockKey), 0))",
                    logger: self.logger
                )
            }
        } catch let error as FleetStoreError {
            throw error
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
            throw FleetStoreError(
                code: .lockTimeout,
                description:
                    "another host has held the fleet's refresh lock for longer than store.postgres.lock_timeout (\(self.settings.lockTimeout)); bearerd keeps its token and tries again"
            )
        } catch {
            throw FleetStoreError.unavailable(error)
        }
    }

    var lockKey: String { "bearerd:\(self.table):\(self.profile)" }

    // MARK: Rows

    func read(on connection: PostgresConnection) async throws -> SharedSession {
        let rows: PostgresRowSequence
        do {
            rows = try await connection.query(
                "SELECT version, sealed, written_by, written_at, schema_version FROM \(unescaped: self.table) WHERE profile = \(self.profile)",
                logger: self.logger
            )
        } catch {
            throw FleetStoreError.unavailable(error)
        }
        for try await (version, sealed, writtenBy, writtenAt, schema) in rows.decode(
            (Int64, ByteBuffer?, String?, Date?, Int32).self
        ) {
            guard schema <= Self.schemaVersion else {
                throw FleetStoreError(
                    code: .damaged,
                    description:
                        "the fleet's row \"\(self.profile)\" in \(self.table) was written by a newer bearerd (schema \(schema)): upgrade this host"
                )
            }
            guard let sealed else {
                return SharedSession(version: version, tokens: nil, writtenBy: writtenBy, writtenAt: writtenAt)
            }
            return SharedSession(
                version: version,
                tokens: try self.open(sealed),
                writtenBy: writtenBy,
                writtenAt: writtenAt
            )
        }
        return SharedSession(version: 0, tokens: nil)
    }

    private func open(_ sealed: ByteBuffer) throws(FleetStoreError) -> StoredTokens {
        do throws(StoreError) {
            return try self.sealer.open(Array(buffer: sealed))
        } catch  where error.code == .wrongKey {
            throw FleetStoreError(
                code: .wrongKey,
                description:
                    "\(self.sealer.wrongKey): every host of the fleet needs the same store.key_file; this host changes nothing"
            )
        } catch  where error.code == .otherProfile {
            throw FleetStoreError(
                code: .wrongKey,
                description:
                    "the fleet's row \"\(self.profile)\" holds tokens sealed for the profile \"\(error.detail ?? "")\"; this host changes nothing"
            )
        } catch  where error.code == .corrupted {
            throw FleetStoreError(
                code: .damaged,
                description:
                    "the fleet's row \"\(self.profile)\" in \(self.table) is damaged (\(error.detail ?? "unreadable")); nothing was changed: delete the row (DELETE FROM \(self.table) WHERE profile = '\(self.profile)') and log in again"
            )
        } catch {
            throw FleetStoreError(code: .config, description: "store.key_file: \(error)", underlying: error)
        }
    }

    /// Writes the sealed tokens; `announce`: as a new version, told to every host.
    func write(
        _ tokens: StoredTokens,
        announce: Bool,
        floor: Int64,
        on connection: PostgresConnection
    ) async throws -> Int64 {
        let sealed = ByteBuffer(bytes: try self.sealer.seal(tokens))
        let rows: PostgresRowSequence
        if announce {
            rows = try await connection.query(
                """
                INSERT INTO \(unescaped: self.table) AS s (profile, schema_version, version, sealed, written_by, written_at)
                VALUES (\(self.profile), \(Self.schemaVersion), \(floor + 1), \(sealed), \(self.host), now())
                ON CONFLICT (profile) DO UPDATE SET version = GREATEST(s.version, \(floor)) + 1, sealed = excluded.sealed,
                  written_by = excluded.written_by, written_at = excluded.written_at,
                  refresh_started_by = NULL, refresh_started_at = NULL
                RETURNING version
                """,
                logger: self.logger
            )
        } else {
            rows = try await connection.query(
                """
                INSERT INTO \(unescaped: self.table) AS s (profile, schema_version, version, sealed, refresh_started_by, refresh_started_at)
                VALUES (\(self.profile), \(Self.schemaVersion), 0, \(sealed), \(self.host), now())
                ON CONFLICT (profile) DO UPDATE SET sealed = excluded.sealed,
                  refresh_started_by = excluded.refresh_started_by, refresh_started_at = excluded.refresh_started_at
                RETURNING version
                """,
                logger: self.logger
            )
        }
        var version: Int64 = 0
        for try await value in rows.decode(Int64.self) { version = value }
        if announce {
            // Delivered when the write has committed (it has: each statement commits on its own).
            try await connection.query(
                "SELECT pg_notify(\(self.channel), \("\(self.profile) \(version)"))",
                logger: self.logger
            )
        }
        return version
    }

    struct Lease: SharedSessionLease {
        let store: PostgresSessionStore
        let connection: PostgresConnection

        func write(_ tokens: StoredTokens, announce: Bool, floor: Int64) async throws -> Int64 {
            do {
                return try await self.store.answering(self.connection, "a write of the row") {
                    try await self.store.write(tokens, announce: announce, floor: floor, on: self.connection)
                }
            } catch {
                throw FleetStoreError.unavailable(error)
            }
        }
    }

    // MARK: Schema

    /// Creates the table (and says so) and the profile's row if they are missing, once.
    func prepare() async throws {
        if self.prepared.withLock({ $0 }) { return }
        do {
            let created = try await self.withConnection { connection in
                do {
                    return try await self.answering(connection, "the table's creation") {
                        try await self.createTable(on: connection)
                    }
                } catch {
                    _ = try? await connection.query("ROLLBACK", logger: self.logger)
                    throw error
                }
            }
            if created {
                self.logger.notice("created the fleet's table in PostgreSQL", metadata: ["table": "\(self.table)"])
            }
        } catch {
            throw FleetStoreError.unavailable(error)
        }
        self.prepared.withLock { $0 = true }
    }

    /// In one transaction, under a lock that makes hosts starting together create it once.
    private func createTable(on connection: PostgresConnection) async throws -> Bool {
        try await connection.query("BEGIN", logger: self.logger)
        try await connection.query(
            "SELECT pg_advisory_xact_lock(hashtextextended('bearerd:schema', 0))",
            logger: self.logger
        )
        var missing = true
        let rows = try await connection.query("SELECT to_regclass(\(self.table)) IS NOT NULL", logger: self.logger)
        for try await exists in rows.decode(Bool.self) { missing = !exists }
        if missing {
            try await connection.query(
                """
                CREATE TABLE \(unescaped: self.table) (
                  profile text PRIMARY KEY,
                  schema_version integer NOT NULL,
                  version bigint NOT NULL,
                  sealed bytea,
                  written_by text,
                  written_at timestamptz,
                  refresh_started_by text,
                  refresh_started_at timestamptz
                )
                """,
                logger: self.logger
            )
        }
        try await connection.query("COMMIT", logger: self.logger)
        return missing
    }

    /// Runs `body` with a connection of the pool, or throws `unavailable` when none comes within
    /// `store.postgres.connect_timeout`: a pool waiting for a database that is gone would wait for
    /// ever. Once it has its connection, `body` runs to its end.
    func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let leased = LeaseFlag()
        let limit = self.settings.connectTimeout
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                try await self.client.withConnection { connection in
                    leased.value.store(true, ordering: .releasing)
                    return try await body(connection)
                }
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            while let next = try await group.next() {
                if let value = next { return value }
                if !leased.value.load(ordering: .acquiring) {
                    throw FleetStoreError(
                        code: .unavailable,
                        description: "no connection to PostgreSQL within store.postgres.connect_timeout (\(limit))"
                    )
                }
            }
            throw CancellationError()
        }
    }
}

/// Whether the pool has handed a connection over.
private final class LeaseFlag: Sendable {
    let value = Atomic(false)
}
