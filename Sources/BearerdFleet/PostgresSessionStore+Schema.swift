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
            if try await self.isTable(table, on: connection) { continue }
            do {
                try await self.run("CREATE TABLE \(unescaped: table) (\(unescaped: columns))", on: connection)
                created.append(table)
            } catch let error as PSQLError where Self.lostTheRace(error) {
                // Another host created it at the same moment, or something else of that name
                // (a view, a type) is in the way.
                guard try await self.isTable(table, on: connection) else {
                    throw FleetStoreError(
                        code: .config,
                        description:
                            "store.postgres.table: PostgreSQL has something named \(table) (or its type) that is not bearerd's table; drop it, or choose another store.postgres.table"
                    )
                }
            }
        }
        try await self.checkOwners(on: connection)
        try await self.run(
            "INSERT INTO \(unescaped: self.lockTable) (profile) VALUES (\(self.profile)) ON CONFLICT DO NOTHING",
            on: connection
        )
        return created
    }

    /// Whether `table` is a table (not a view, a sequence or a composite type of that name).
    private func isTable(_ table: String, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = to_regclass(\(table)) AND relkind IN ('r', 'p'))",
            logger: self.logger
        )
        var exists = false
        for try await found in rows.decode(Bool.self) { exists = found }
        return exists
    }

    /// What PostgreSQL answers a `CREATE TABLE` whose table another session created at the same
    /// moment (and committed: the answer waits for that session's end): the relation exists
    /// (42P07), its row type exists (42710, `type "…" already exists`), or the catalog's unique
    /// index caught the pair (23505).
    static func lostTheRace(_ error: PSQLError) -> Bool {
        ["42P07", "42710", "23505"].contains(error.serverInfo?[.sqlState] ?? "")
    }

    /// Both tables belong to this host's role (or a role it is a member of): a table another role
    /// made first (where it may create tables, as PUBLIC may in `public` before PostgreSQL 15)
    /// could be locked, granted or written by that role.
    private func checkOwners(on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            """
            SELECT c.relname, pg_get_userbyid(c.relowner), pg_has_role(current_user, c.relowner, 'MEMBER')
            FROM pg_class c WHERE c.oid IN (to_regclass(\(self.table)), to_regclass(\(self.lockTable)))
            """,
            logger: self.logger
        )
        var foreign: [String] = []
        var found = 0
        for try await (name, owner, ours) in rows.decode((String, String, Bool).self) {
            found += 1
            if !ours { foreign.append("\(name) belongs to \(owner)") }
        }
        guard found == 2, foreign.isEmpty else {
            throw FleetStoreError(
                code: .config,
                description:
                    "store.postgres.table: the fleet's tables must belong to bearerd's role, but \(foreign.isEmpty ? "one of them is missing" : foreign.joined(separator: ", ")); drop them (bearerd makes them again) or give them to bearerd's role"
            )
        }
    }
}
