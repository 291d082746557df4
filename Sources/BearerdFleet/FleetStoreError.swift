import PostgresNIO

/// The fleet's store cannot be used; the message says what to do and never holds a token, a
/// password or the database URL.
package struct FleetStoreError: Error, Sendable, CustomStringConvertible {
    /// Which failure it is, for code to compare (`error.code == .lockTimeout`). A struct over a
    /// private enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case config, wrongKey, damaged, unavailable, lockTimeout
        }

        private let kind: Kind

        /// A `store.postgres.*` setting (or the store key) is wrong.
        package static let config = Code(kind: .config)
        /// The row was sealed with another key or for another profile; nothing was changed.
        package static let wrongKey = Code(kind: .wrongKey)
        /// The row cannot be opened; nothing was changed.
        package static let damaged = Code(kind: .damaged)
        /// PostgreSQL did not answer, or refused.
        package static let unavailable = Code(kind: .unavailable)
        /// Another host held the refresh lock for longer than `store.postgres.lock_timeout`.
        package static let lockTimeout = Code(kind: .lockTimeout)

        package var description: String {
            switch self.kind {
            case .config: "config"
            case .wrongKey: "wrong_key"
            case .damaged: "damaged"
            case .unavailable: "unavailable"
            case .lockTimeout: "lock_timeout"
            }
        }
    }

    package let code: Code
    package let description: String
    /// The error this one reports (PostgreSQL's, the store key's), for code to inspect; its
    /// text is never shown beyond ``description``.
    package let underlying: (any Error)?

    init(code: Code, description: String, underlying: (any Error)? = nil) {
        self.code = code
        self.description = description
        self.underlying = underlying
    }

    static func config(_ key: String, _ message: String) -> Self {
        Self(code: .config, description: "\(key): \(message)")
    }

    /// What PostgreSQL (or the way to it) said, without the query's parameters.
    static func unavailable(_ error: any Error) -> Self {
        if let error = error as? FleetStoreError { return error }
        return Self(code: .unavailable, description: "PostgreSQL: \(Self.describe(error))", underlying: error)
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
