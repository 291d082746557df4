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
            doc: "Created if missing (bearerd says so); lowercase letters, digits and _, or schema.table."
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
