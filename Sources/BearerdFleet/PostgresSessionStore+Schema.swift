import Logging
import PostgresNIO
import Synchronization

extension PostgresSessionStore {
    /// Creates the table and its lock table (saying so) if they are missing, and the profile's
    /// lock row, once. No lock is taken for it: an advisory key any role could hold would stall
    /// every host's start; two hosts creating a table at once are told apart by PostgreSQL's
    /// duplicate errors instead.
    func prepare() async throws {
        if self.prepared.withLock({ $0 }) { return }
        do {
            let created = try await self.withConnection { connection in
                try await self.answering(connection, "the table's creation") {
                    try await self.createTables(on: connection)
                }
            }
            for table in created {
                self.logger.notice("created the fleet's table in PostgreSQL", metadata: ["table": "\(table)"])
            }
        } catch {
            throw FleetStoreError.unavailable(error)
        }
        self.prepared.withLock { $0 = true }
    }

    /// The tables this host created.
    private func createTables(on connection: PostgresConnection) async throws -> [String] {
        let definitions = [
            (
                self.table,
                """
                profile text PRIMARY KEY,
                schema_version integer NOT NULL,
                version bigint NOT NULL,
                sealed bytea,
                written_by text,
                written_at timestamptz,
                refresh_started_by text,
                refresh_started_at timestamptz
                """
            ),
            (self.lockTable, "profile text PRIMARY KEY"),
        ]
        var created: [String] = []
        for (table, columns) in definitions {
            var exists = false
            let rows = try await connection.query("SELECT to_regclass(\(table)) IS NOT NULL", logger: self.logger)
            for try await found in rows.decode(Bool.self) { exists = found }
            if exists { continue }
            do {
                try await self.run("CREATE TABLE \(unescaped: table) (\(unescaped: columns))", on: connection)
                created.append(table)
            } catch let error as PSQLError
                where error.serverInfo?[.sqlState] == "42P07" || error.serverInfo?[.sqlState] == "23505"
            {
                // Another host created it at the same moment.
            }
        }
        try await self.checkLockTableOwner(on: connection)
        try await self.run(
            "INSERT INTO \(unescaped: self.lockTable) (profile) VALUES (\(self.profile)) ON CONFLICT DO NOTHING",
            on: connection
        )
        return created
    }

    /// The lock table belongs to the role that owns the session's table: one made first by
    /// another role (where it may create tables) could be locked, or granted, by that role.
    private func checkLockTableOwner(on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            SELECT l.relowner = t.relowner FROM pg_class l, pg_class t
            WHERE l.oid = to_regclass(\(self.lockTable)) AND t.oid = to_regclass(\(self.table))
            """,
            logger: self.logger
        )
        var sameOwner = false
        for try await same in rows.decode(Bool.self) { sameOwner = same }
        guard sameOwner else {
            throw FleetStoreError(
                code: .config,
                description:
                    "store.postgres.table: \(self.lockTable), the fleet's lock table, belongs to another role than \(self.table); drop it (bearerd makes it again) or give it to the same owner"
            )
        }
    }
}
