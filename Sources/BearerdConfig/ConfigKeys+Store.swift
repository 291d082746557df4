extension ConfigKeys {
    /// `store.*`: where the tokens are kept.
    package enum Store {
        static let path = ConfigKeyDescriptor.text(
            "store.path",
            "a file name",
            reload: .newSession,
            sample: .set("/var/lib/bearerd/tokens.store"),
            doc: """
                The token store: the user's tokens and the client token (kept apart: a logout keeps the
                client token), encrypted with AES-256-GCM (OpenSSL), replaced atomically
                and durably on every change (mode 0600), and locked so one daemon at a time uses it. Without a
                key, tokens are kept in memory only and a restart starts from auth.refresh_token_file.
                Default: $STATE_DIRECTORY/tokens.store under systemd (StateDirectory=bearerd), otherwise
                /var/lib/bearerd/tokens.store; a relative name is in that directory.
                """
        )
        static let keyFile = ConfigKeyDescriptor.text(
            "store.key_file",
            "a file of 32 bytes, owner-only",
            reload: .newSession,
            sample: .set("/etc/bearerd/store.key"),
            doc: """
                The key: 32 random bytes, owner-only (`bearerd keygen --out PATH` writes one with mode 0400).
                A relative name is looked up in $CREDENTIALS_DIRECTORY when systemd sets it, otherwise next
                to this file. So `key_file: store.key` with the unit's LoadCredential=store.key:/etc/bearerd/
                store.key (or LoadCredentialEncrypted=) works for the service and for `bearerd` run as root;
                scripts/install writes it that way.
                """
        )
        static let passphraseFile = ConfigKeyDescriptor.text(
            "store.passphrase_file",
            "a file of mode 0600",
            reload: .newSession,
            sample: .commented("/etc/bearerd/store.passphrase"),
            doc: """
                Or a passphrase (a file holding it, at least 12 characters), stretched with scrypt
                (N=2^15, r=8, p=1) with a random salt kept in the store's header. Not both.
                """
        )
        static let profile = ConfigKeyDescriptor.text(
            "store.profile",
            "a short name",
            default: "default",
            reload: .newSession,
            doc: """
                A name written into the store's header and checked when it is read, so a store is never
                read by a config it was not written for. With backend: postgres, it names the fleet's row too.
                """
        )
        static let backend = ConfigKeyDescriptor(
            "store.backend",
            .choice(["file", "postgres"]),
            default: "file",
            reload: .newSession,
            sample: .commented("postgres"),
            doc: """
                file (default): the store above, this host's own. postgres: a fleet of bearerd (replicas, a
                CI fleet, a failover pair) shares one session through a PostgreSQL row, so a rotated refresh
                token is sent once for the whole fleet: a refresh takes the fleet's lock, reads the row again
                and adopts what another host refreshed; a new version is announced with NOTIFY. The row holds
                the same sealed bytes as the file (AES-256-GCM with key_file, the same key on every host):
                PostgreSQL and its backups never see a token. path is not used then.
                """
        )

        static let section = ConfigSection(
            "store",
            [.key(path), .key(keyFile), .key(passphraseFile), .key(profile), .key(backend), .section(Postgres.section)]
        )
    }
}
