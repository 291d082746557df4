/// `store.postgres.*`: a fleet of bearerd shares one session through a PostgreSQL row. The
/// config reads it (`BearerdConfiguration+Postgres.swift`, where each key is declared).
package struct PostgresSettings: Sendable, Equatable {
    /// `store.postgres.sslmode`, as libpq names them.
    package enum TLSMode: String, Sendable, CaseIterable {
        case disable
        /// Encrypted, the server's certificate not checked.
        case require
        /// Encrypted, the certificate checked against `ca_file` (or the system's) and the host.
        case verifyFull = "verify-full"
    }

    /// `store.postgres.url_file`, resolved: `postgres://USER:PASSWORD@HOST:PORT/DATABASE` (a
    /// secret, so a file or a systemd credential, never the config).
    package var urlFile: String
    /// `store.postgres.sslmode`; by default `verify-full`, or `disable` for a loopback host or
    /// a unix socket.
    package var tls: TLSMode?
    /// `store.postgres.ca_file`, resolved.
    package var caFile: String?
    /// `store.postgres.table` (default `bearerd_sessions`), created if missing.
    package var table: String
    /// `store.postgres.host_name`: how the row names this host (default: the host name).
    package var hostName: String
    /// `store.postgres.lock_timeout`: the longest wait for the fleet's refresh lock.
    package var lockTimeout: Duration
    /// `store.postgres.poll_interval`: how often the row is read in case a notification was lost.
    package var pollInterval: Duration
    /// `store.postgres.connect_timeout`.
    package var connectTimeout: Duration

    package init(
        urlFile: String,
        tls: TLSMode? = nil,
        caFile: String? = nil,
        table: String,
        hostName: String,
        lockTimeout: Duration,
        pollInterval: Duration,
        connectTimeout: Duration
    ) {
        self.urlFile = urlFile
        self.tls = tls
        self.caFile = caFile
        self.table = table
        self.hostName = hostName
        self.lockTimeout = lockTimeout
        self.pollInterval = pollInterval
        self.connectTimeout = connectTimeout
    }

    /// A table name bearerd writes into SQL: lowercase letters, digits and `_`, starting with a
    /// letter or `_`, optionally after a schema name of the same kind. The table's name leaves
    /// room for its lock table's (``lockTableSuffix``) within PostgreSQL's 63 bytes, and no
    /// part names a system catalog (`pg_*`, `information_schema`), which bearerd must not write.
    package static func isValidTable(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count) else { return false }
        let longest = [63, 63 - Self.lockTableSuffix.utf8.count]
        return zip(parts, longest.suffix(parts.count)).allSatisfy { part, limit in
            guard let first = part.utf8.first, part.utf8.count <= limit else { return false }
            guard !part.hasPrefix("pg_"), part != "information_schema" else { return false }
            let isStart = { (byte: UInt8) in (0x61...0x7A).contains(byte) || byte == 0x5F }
            return isStart(first) && part.utf8.allSatisfy { isStart($0) || (0x30...0x39).contains($0) }
        }
    }

    /// The fleet's refresh lock is a row of `<table>_lock`, which only bearerd's role may
    /// update: a role without privileges on it cannot take, hold or fake the lock.
    package static let lockTableSuffix = "_lock"

    /// `store.postgres.table`'s lock table.
    package var lockTable: String { self.table + Self.lockTableSuffix }
}
