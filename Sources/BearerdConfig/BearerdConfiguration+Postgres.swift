import BearerdFleet
import Foundation

extension BearerdConfiguration.Store {
    /// `store.postgres.*`: ``PostgresSettings``, owned by the fleet.
    package typealias Postgres = PostgresSettings
}

extension PostgresSettings {
    /// `store.postgres.*`, checked as far as a config can be: the URL file is read when the store
    /// opens (it holds a password), but it must exist and be private now.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Store.Postgres
        let urlFile = builder.string(Keys.urlFile).map(builder.resolve)
        if urlFile == nil {
            builder.issue(
                "store.postgres.url_file",
                "is required with store.backend: postgres: a file holding postgres://USER:PASSWORD@HOST:PORT/DATABASE"
            )
        }
        if let file = urlFile {
            var info = stat()
            if stat(file, &info) != 0 {
                builder.issue("store.postgres.url_file", "cannot find \(file)")
            } else if info.st_mode & 0o077 != 0 {
                builder.issue(
                    "store.postgres.url_file",
                    "\(file) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users may read the database password: run chmod 400 \(file)"
                )
            }
        }
        let tls = builder.choice(Keys.sslmode).flatMap(
            PostgresSettings.TLSMode.init(rawValue:)
        )
        let caFile = builder.string(Keys.caFile).map(builder.resolve)
        if let caFile, builder.unreadable(caFile) {
            builder.issue("store.postgres.ca_file", "cannot read \(caFile)")
        }
        let table = builder.string(Keys.table) ?? ""
        if !PostgresSettings.isValidTable(table) {
            builder.issue(
                "store.postgres.table",
                "must be a plain table name (lowercase letters, digits and _, optionally schema.table; the table at most 58 bytes, leaving room for its lock table \(table)_lock; not pg_* or information_schema; got \"\(table)\")"
            )
        }
        var hostName = builder.string(Keys.hostName) ?? ProcessInfo.processInfo.hostName
        // Printable ASCII: the hosts' database sessions are named after it, and a host tells
        // whether another is still connected by that name.
        if hostName.utf8.count > 255 || !hostName.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            builder.issue(
                "store.postgres.host_name",
                "must be a short name of printable ASCII without spaces (got \"\(hostName)\")"
            )
            hostName = "invalid"
        }
        self.init(
            urlFile: urlFile ?? "",
            tls: tls,
            caFile: caFile,
            table: table,
            hostName: hostName,
            lockTimeout: builder.duration(Keys.lockTimeout),
            pollInterval: builder.duration(Keys.pollInterval),
            connectTimeout: builder.duration(Keys.connectTimeout)
        )
    }
}

extension ConfigKeys.Store {
    /// `store.postgres.*`: the fleet's shared session.
    package enum Postgres {
        static let urlFile = ConfigKeyDescriptor.text(
            "store.postgres.url_file",
            "a file of mode 0600",
            reload: .newSession,
            sample: .set("postgres.url"),
            doc: """
                A file (or a systemd credential: a relative name is looked up in $CREDENTIALS_DIRECTORY)
                holding postgres://USER:PASSWORD@HOST:PORT/DATABASE; a unix socket is a percent-encoded
                directory as the host (postgres://bearerd@%2Frun%2Fpostgresql/bearerd). Owner-only.
                """
        )
        static let sslmode = ConfigKeyDescriptor(
            "store.postgres.sslmode",
            .choice(["disable", "require", "verify-full"]),
            reload: .restart,
            sample: .set("verify-full"),
            doc: """
                disable, require (encrypted, unchecked) or verify-full (the certificate against ca_file
                or the system's roots, and the host name). Default: verify-full, or disable for a
                loopback host or a unix socket.
                """
        )
        static let caFile = ConfigKeyDescriptor.text(
            "store.postgres.ca_file",
            "a PEM file",
            reload: .restart,
            sample: .set("/etc/ssl/certs/db-ca.pem"),
            doc: ""
        )
        static let table = ConfigKeyDescriptor.text(
            "store.postgres.table",
            "a table name",
            default: "bearerd_sessions",
            reload: .newSession,
            doc: """
                Created if missing (bearerd says so), with its lock table TABLE_lock (the fleet's refresh
                lock: a row only bearerd's role may lock); lowercase letters, digits and _, or schema.table;
                at most 58 bytes; not pg_* or information_schema.
                """
        )
        static let hostName = ConfigKeyDescriptor.text(
            "store.postgres.host_name",
            "a short name",
            reload: .restart,
            sample: .set("web-1"),
            doc: "How the row names the host that refreshed last (status shows it). Default: the host name."
        )
        static let lockTimeout = ConfigKeyDescriptor.duration(
            "store.postgres.lock_timeout",
            default: "30s",
            within: .seconds(1)...(.seconds(600)),
            reload: .restart,
            doc: """
                The longest wait for another host's refresh (1s to 10m); then this host keeps its token
                and tries again.
                """
        )
        static let pollInterval = ConfigKeyDescriptor.duration(
            "store.postgres.poll_interval",
            default: "30s",
            within: .seconds(1)...(.seconds(3600)),
            reload: .restart,
            doc: "How often the row is read in case a notification was lost (1s to 1h)."
        )
        static let connectTimeout = ConfigKeyDescriptor.duration(
            "store.postgres.connect_timeout",
            default: "5s",
            within: .milliseconds(100)...(.seconds(60)),
            reload: .restart,
            doc: ""
        )

        static let section = ConfigSection(
            "store.postgres",
            commented: true,
            [
                .key(urlFile), .key(sslmode), .key(caFile), .key(table), .key(hostName), .key(lockTimeout),
                .key(pollInterval), .key(connectTimeout),
            ]
        )
    }
}
