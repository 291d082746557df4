import PostgresNIO

/// The fleet's store cannot be used; the message says what to do and never holds a token, a
/// password or the database URL.
package struct FleetStoreError: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable, Equatable {
        /// A `store.postgres.*` setting is wrong.
        case config
        /// The row was sealed with another key or for another profile; nothing was changed.
        case wrongKey
        /// The row cannot be opened; nothing was changed.
        case damaged
        /// PostgreSQL did not answer, or refused.
        case unavailable
        /// Another host held the refresh lock for longer than `store.postgres.lock_timeout`.
        case lockTimeout
    }

    package let code: Code
    package let description: String

    static func config(_ key: String, _ message: String) -> Self {
        Self(code: .config, description: "\(key): \(message)")
    }

    /// What PostgreSQL (or the way to it) said, without the query's parameters.
    static func unavailable(_ error: any Error) -> Self {
        if let error = error as? FleetStoreError { return error }
        return Self(code: .unavailable, description: "PostgreSQL: \(Self.describe(error))")
    }

    static func describe(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        var text = "\(error.code)"
        if let message = error.serverInfo?[.message] {
            text += ": \(message)"
            if let state = error.serverInfo?[.sqlState] { text += " (SQLSTATE \(state))" }
        }
        if let underlying = error.underlying { text += ": \(underlying)" }
        return text
    }
}
