import BearerdAuth
import PostgresNIO

extension PostgresSessionStore {
    /// How long one statement may take: twice `store.postgres.connect_timeout`, at least 5 s.
    var statementLimit: Duration { max(self.settings.connectTimeout * 2, .seconds(5)) }

    /// Runs `body`'s statements on `connection`, or closes the connection after `limit` and throws
    /// `unavailable`: a database cut off without a reset would otherwise hold a refresh (and the
    /// fleet's lock) until the kernel gives up on the connection, hours later. Closing it fails
    /// the statement and releases the lock.
    func answering<T: Sendable>(
        _ connection: PostgresConnection,
        within limit: Duration? = nil,
        _ what: String,
        _ body: @escaping @Sendable () async throws -> T
    ) async throws -> T {
        let limit = limit ?? self.statementLimit
        return try await withDeadline(limit, body) {
            self.logger.warning(
                "PostgreSQL did not answer; closing the connection",
                metadata: ["waited_for": "\(what)", "limit": "\(limit)"]
            )
            try? await connection.close()
            throw FleetStoreError(
                code: .unavailable,
                description: "PostgreSQL did not answer \(what) within \(limit)"
            )
        }
    }
}
