import BearerdTokens
import Logging
import PostgresNIO
import Synchronization

/// The fleet's refresh lock: the profile's row of `<table>_lock`, locked `FOR UPDATE` in an open
/// transaction. A refresh runs only once that statement has returned the row — the one positive
/// proof that this host holds the lock; a timeout, an error, a missing row or a connection lost on
/// the way all mean "no lock: keep the token, try again". `FOR NO KEY UPDATE`: exclusive among
/// bearerd's hosts, without conflicting with a foreign key another role might point at the row.
///
/// Why a row and not an advisory key: any role that may connect to the database (PUBLIC may, by
/// default) can take any advisory key, and so stall the fleet or, before bearerd checked each
/// statement's outcome, make a host go on without the lock. Locking a row `FOR UPDATE` needs the
/// UPDATE privilege on bearerd's own table.
extension PostgresSessionStore {
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
                outcome = .success(try await body(row, Lease(store: self)))
            } catch {
                outcome = .failure(error)
            }
            await self.unlock(connection)
            return try outcome.get()
        }
    }

    /// Takes the lock, waiting at most `store.postgres.lock_timeout` for the host that holds it,
    /// or throws with the connection out of its transaction (or closed).
    private func lock(on connection: PostgresConnection) async throws {
        let timeout = self.settings.lockTimeout.components
        let milliseconds = "\(timeout.seconds * 1000 + timeout.attoseconds / 1_000_000_000_000_000)"
        do {
            // A database that does not answer at all is found here, before the long wait below.
            try await self.answering(connection, "a statement") {
                // READ COMMITTED whatever the database's default, so the row read under the lock
                // is the one committed last, not a snapshot from before the wait.
                try await self.run("BEGIN ISOLATION LEVEL READ COMMITTED", on: connection)
                // The wait is bounded; the transaction itself must not be ended by the server's
                // idle or transaction timeouts while the refresh it guards is in flight.
                try await self.run(
                    """
                    SELECT set_config(name, CASE name WHEN 'lock_timeout' THEN \(milliseconds) ELSE '0' END, true)
                    FROM pg_settings
                    WHERE name IN ('lock_timeout', 'idle_in_transaction_session_timeout', 'transaction_timeout')
                    """,
                    on: connection
                )
            }
            let held = try await self.answering(
                connection,
                within: self.settings.lockTimeout + self.statementLimit,
                "the lock"
            ) {
                try await self.run(
                    "SELECT profile FROM \(unescaped: self.lockTable) WHERE profile = \(self.profile) FOR NO KEY UPDATE",
                    on: connection
                )
            }
            guard held == 1 else {
                // Deleted by hand: the next attempt makes it again.
                self.prepared.withLock { $0 = false }
                throw FleetStoreError(
                    code: .unavailable,
                    description:
                        "the fleet's lock row \"\(self.profile)\" in \(self.lockTable) is missing; bearerd keeps its token, makes the row again and tries again"
                )
            }
        } catch {
            await self.unlock(connection)
            if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState],
                ["42P01", "42703"].contains(state)
            {
                // A table dropped or changed by hand: the next attempt makes it again, or says why not.
                self.prepared.withLock { $0 = false }
            }
            if let error = error as? PSQLError, error.serverInfo?[.sqlState] == "55P03" {
                throw FleetStoreError(
                    code: .lockTimeout,
                    description:
                        "another host has held the fleet's refresh lock for longer than store.postgres.lock_timeout (\(self.settings.lockTimeout)); bearerd keeps its token and tries again"
                )
            }
            throw self.lost(error)
        }
    }

    /// Ends the lock's transaction; a connection that may still hold it is closed, which ends it.
    func unlock(_ connection: PostgresConnection) async {
        // Closed (by `answering`, or by PostgreSQL): the transaction, and the lock, are gone. A
        // statement written to a closed connection would never be answered: postgres-nio drops
        // it with the write.
        guard !connection.isClosed else { return }
        do {
            _ = try await self.answering(connection, "the unlock") { try await self.run("ROLLBACK", on: connection) }
        } catch {
            self.logger.warning(
                "cannot release the fleet's refresh lock; closing its connection",
                metadata: ["error": "\(FleetStoreError.describe(error))"]
            )
            try? await connection.close()
        }
    }

    /// Runs `query` and reads its whole outcome; returns the number of rows. postgres-nio hands
    /// back the rows as soon as the statement is bound, before it has run: an error it meets (a
    /// lock timeout, a permission denied) arrives only while the rows are read, so a statement
    /// whose rows are not read has not been checked.
    @discardableResult
    func run(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> Int {
        let rows = try await connection.query(query, logger: self.logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}
