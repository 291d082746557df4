import BearerdAuth
import BearerdStore
import BearerdTokens
import Foundation
import Logging
import NIOSSL
import PostgresNIO
import Synchronization

/// The fleet's session in one PostgreSQL row: the same sealed bytes as the file store (the store
/// key is the fleet's shared credential) and a version that grows with every change. The fleet's
/// one refresh lock is the profile's row in `<table>_lock`, locked `FOR UPDATE` in a transaction
/// of its own connection (see `PostgresSessionStore+Lock.swift`): held while other connections
/// commit — the refresh-in-flight mark is committed before the refresh token leaves — and ended
/// with that connection if the host dies.
package final class PostgresSessionStore: SharedSessionStore {
    let client: PostgresClient
    private let sealer: StoreSealer
    let profile: String
    /// Validated by the config (``PostgresSettings/isValidTable(_:)``).
    let table: String
    /// The fleet's refresh lock: this profile's row in `<table>_lock`.
    let lockTable: String
    /// The LISTEN/NOTIFY channel: the table's name.
    let channel: String
    let host: String
    let settings: PostgresSettings
    let logger: Logger
    let prepared = Mutex(false)
    /// When an operation last could not reach the database (a restart, a failover, the network):
    /// a host without a connection now may not have reconnected yet since then.
    let lostAt = Mutex<ContinuousClock.Instant?>(nil)

    /// `error` as the store's "unavailable", noting when the database was lost.
    func lost(_ error: any Error) -> FleetStoreError {
        self.lostAt.withLock { $0 = .now }
        return FleetStoreError.unavailable(error)
    }
    private let running = Mutex(false)
    static let schemaVersion: Int32 = 1

    /// Reads `store.postgres.url_file` and the key; connects only once ``run()`` runs.
    package init(
        _ settings: PostgresSettings,
        profile: String,
        key: StoreKey,
        logger: Logger
    ) throws(FleetStoreError) {
        let url = try PostgresURL.read(settings.urlFile)
        self.settings = settings
        self.profile = profile
        self.table = settings.table
        self.lockTable = settings.lockTable
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

    // MARK: Rows

    /// The row, and its refresh-in-flight mark as the database sees it now: its age by the
    /// database's clock, and whether the host that marked it still has a connection (sessions of
    /// bearerd's own role, named after their host: see ``applicationName(host:)``).
    func read(on connection: PostgresConnection) async throws -> SharedSession {
        let rows: PostgresRowSequence
        do {
            rows = try await connection.query(
                """
                SELECT version, sealed, written_by, written_at, schema_version, refresh_started_by,
                  extract(epoch FROM clock_timestamp() - refresh_started_at)::float8,
                  EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.usename = current_user AND a.pid <> pg_backend_pid()
                    AND a.application_name = 'bearerd ' || left(s.refresh_started_by, 55)),
                  NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.usename = current_user
                    AND a.backend_start < s.refresh_started_at)
                FROM \(unescaped: self.table) s WHERE profile = \(self.profile)
                """,
                logger: self.logger
            )
        } catch {
            throw self.lost(error)
        }
        typealias Row = (Int64, ByteBuffer?, String?, Date?, Int32, String?, Double?, Bool, Bool)
        // Every row is read, to the statement's end: an error after the first row still counts.
        var found: Row?
        for try await row in rows.decode(Row.self) where found == nil {
            found = row
        }
        guard let (version, sealed, writtenBy, writtenAt, schema, markedBy, markAge, markerConnected, allNewer) = found
        else {
            return SharedSession(version: 0, tokens: nil)
        }
        guard schema <= Self.schemaVersion else {
            throw FleetStoreError(
                code: .damaged,
                description:
                    "the fleet's row \"\(self.profile)\" in \(self.table) was written by a newer bearerd (schema \(schema)): upgrade this host"
            )
        }
        let mark = markedBy.map { host in
            // A row may hold any time ('infinity' is a timestamptz): an age that is no age is an
            // old mark, never one waited for without end.
            let age = markAge.map { $0.isFinite && $0 >= 0 ? min($0, 1e9) : 1e9 } ?? 0
            // Every session of bearerd's role is younger than the mark (a restart, a crash
            // restart or a failover came since: all reconnected), or this host lost the database
            // since: the marking host may only not have reconnected yet.
            let lost = self.lostAt.withLock { $0 }.map { ContinuousClock.now - $0 < .seconds(age + 1) } ?? false
            return InFlightMark(
                host: host,
                age: age,
                hostConnected: markerConnected,
                databaseDisrupted: allNewer || lost
            )
        }
        return SharedSession(
            version: version,
            tokens: try sealed.map { try self.open($0) },
            writtenBy: writtenBy,
            writtenAt: writtenAt,
            inFlight: mark
        )
    }

    /// The name a host's connections go by (`application_name`), so that another host can tell
    /// whether the host that marked a refresh in flight is still connected.
    static func applicationName(host: String) -> String {
        var name = Self.applicationPrefix
        for character in host.prefix(Self.hostInName) where character.isASCII { name.append(character) }
        return name
    }

    /// As ``read(on:)``'s statement spells it.
    static let applicationPrefix = "bearerd "
    /// PostgreSQL keeps 63 bytes of an application name (and ``read(on:)`` compares 55).
    static let hostInName = 55

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

    /// Writes the sealed tokens if the row's version is still `expected`; `announce`: as a new
    /// version, told to every host; otherwise the same version, with this host's refresh-in-flight
    /// mark if the tokens carry one (`refreshSentAt`), without a mark if they do not.
    func write(
        _ tokens: StoredTokens,
        announce: Bool,
        floor: Int64,
        expected: Int64,
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
                WHERE s.version = \(expected)
                RETURNING version
                """,
                logger: self.logger
            )
        } else if (tokens.user ?? tokens.client)?.refreshSentAt == nil {
            // The host's own attempt ended without an answer: its mark goes, so that the next
            // attempt, this host's or another's, is not held back by a refresh no longer in flight.
            rows = try await connection.query(
                """
                UPDATE \(unescaped: self.table) SET sealed = \(sealed), refresh_started_by = NULL, refresh_started_at = NULL
                WHERE profile = \(self.profile) AND version = \(expected)
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
                  refresh_started_by = excluded.refresh_started_by,
                  refresh_started_at = CASE WHEN s.refresh_started_by = excluded.refresh_started_by
                    THEN coalesce(s.refresh_started_at, excluded.refresh_started_at) ELSE excluded.refresh_started_at END
                WHERE s.version = \(expected)
                RETURNING version
                """,
                logger: self.logger
            )
        }
        var written: Int64?
        for try await value in rows.decode(Int64.self) { written = value }
        guard let version = written else {
            throw FleetStoreError(
                code: .unavailable,
                description:
                    "the fleet's row changed while this host held the lock (version \(expected) expected); nothing was written, and bearerd reads it again"
            )
        }
        if announce {
            // Delivered when the write has committed (it has: each statement commits on its own).
            // The write stands even if this fails (any role can fill the notification queue):
            // the other hosts read the row every poll_interval.
            do {
                try await self.run("SELECT pg_notify(\(self.channel), \("\(self.profile) \(version)"))", on: connection)
            } catch {
                self.logger.warning(
                    "wrote the new tokens to the fleet's row, but cannot tell the other hosts; they read it within store.postgres.poll_interval",
                    metadata: ["error": "\(FleetStoreError.describe(error))"]
                )
            }
        }
        return version
    }

    /// Writes while the lock is held. Each goes through a pooled connection of its own and
    /// commits at once, so the refresh-in-flight mark is in the row before the refresh token
    /// leaves; the lock's connection stays in its transaction until the body ends.
    struct Lease: SharedSessionLease {
        let store: PostgresSessionStore

        func write(_ tokens: StoredTokens, announce: Bool, floor: Int64, expected: Int64) async throws -> Int64 {
            let store = self.store
            do {
                return try await store.withConnection { connection in
                    try await store.answering(connection, "a write of the row") {
                        try await store.write(
                            tokens,
                            announce: announce,
                            floor: floor,
                            expected: expected,
                            on: connection
                        )
                    }
                }
            } catch {
                throw store.lost(error)
            }
        }
    }

    /// Runs `body` with a connection of the pool, or throws `unavailable` when none comes within
    /// `store.postgres.connect_timeout`: a pool waiting for a database that is gone would wait for
    /// ever. Once it has its connection, `body` runs to its end.
    func withConnection<T: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        let leased = LeaseFlag()
        let limit = self.settings.connectTimeout
        return try await withDeadline(limit) {
            try await self.client.withConnection { connection in
                leased.value.store(true, ordering: .releasing)
                return try await body(connection)
            }
        } expired: {
            // A connection already leased runs `body` to its end (its statements have their own).
            guard leased.value.load(ordering: .acquiring) else {
                throw FleetStoreError(
                    code: .unavailable,
                    description: "no connection to PostgreSQL within store.postgres.connect_timeout (\(limit))"
                )
            }
        }
    }
}

/// Whether the pool has handed a connection over.
private final class LeaseFlag: Sendable {
    let value = Atomic(false)
}
