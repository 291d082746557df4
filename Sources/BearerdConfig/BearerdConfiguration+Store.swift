import Foundation

extension BearerdConfiguration {
    /// `store.*`: the encrypted token store.
    package struct Store: Sendable {
        /// `store.path`, resolved.
        package var path: String
        /// `store.key_file`, resolved: 32 random bytes (`bearerd keygen`).
        package var keyFile: String?
        /// `store.passphrase_file`, resolved: stretched with scrypt.
        package var passphraseFile: String?
        /// `store.profile`: written into the store's header and checked when it is read; with
        /// the postgres backend, the name of the fleet's row too.
        package var profile: String
        /// `store.postgres.*` when `store.backend: postgres`: the fleet's shared session.
        package var postgres: Postgres?

        /// Whether tokens are kept on disk (a key is configured) or in memory only.
        package var isEncryptedOnDisk: Bool { self.keyFile != nil || self.passphraseFile != nil }

        /// Reads and checks every `store.*` key.
        init(reading builder: inout ConfigBuilder) {
            typealias Keys = ConfigKeys.Store
            let stateDirectory = builder.environment["STATE_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
            let defaultPath = (stateDirectory ?? "/var/lib/bearerd") + "/tokens.store"
            var path = defaultPath
            if let raw = builder.string(Keys.path) {
                path = raw.hasPrefix("/") ? raw : (stateDirectory ?? builder.baseDirectory) + "/" + raw
            }
            let keyFile = builder.string(Keys.keyFile).map(builder.resolve)
            let passphraseFile = builder.string(Keys.passphraseFile).map(builder.resolve)
            if keyFile != nil && passphraseFile != nil {
                builder.issue("store.passphrase_file", "set store.key_file or store.passphrase_file, not both")
            }
            for (key, file) in [("store.key_file", keyFile), ("store.passphrase_file", passphraseFile)] {
                guard let file else { continue }
                var info = stat()
                if stat(file, &info) != 0 {
                    builder.issue(key, "cannot find \(file): create a key with `bearerd keygen --out \(file)`")
                } else if info.st_mode & 0o077 != 0 {
                    builder.issue(
                        key,
                        "\(file) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users may read it: run chmod 400 \(file)"
                    )
                }
            }
            let profile = builder.string(Keys.profile) ?? ""
            if profile.utf8.count > 64 || profile.contains(where: { $0.isNewline }) {
                builder.issue("store.profile", "must be a short name on one line (got \"\(profile)\")")
            }
            var postgres: BearerdConfiguration.Store.Postgres?
            switch builder.choice(Keys.backend) {
            case "postgres":
                if keyFile == nil && passphraseFile == nil {
                    builder.issue(
                        "store.backend",
                        "postgres keeps the same sealed tokens as the file store: set store.key_file (the same key on every host of the fleet)"
                    )
                }
                postgres = builder.section("postgres") { Postgres(reading: &$0) }
            default:
                // file, or a word choice() has reported.
                break
            }
            self.path = path
            self.keyFile = keyFile
            self.passphraseFile = passphraseFile
            self.profile = profile
            self.postgres = postgres
        }
    }
}

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
                /var/lib/bearerd/tokens.store. A relative name is in $STATE_DIRECTORY under systemd, otherwise
                next to this file (`path: tokens.store` for a bearerd run by hand).
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
