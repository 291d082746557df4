import BearerdTokens

extension BearerdConfiguration {
    /// `per_caller` and `callers.*`: a token set for each local user who calls the session.
    package struct Callers: Sendable, Equatable {
        /// `per_caller`: each caller uid has tokens of their own, from their own login.
        package var enabled: Bool
        /// `callers.max_loaded`.
        package var maxLoaded: Int
        /// `callers.idle_unload`.
        package var idleUnload: Duration
        /// `callers.max_refreshes_per_minute`: the ceiling over all users of the session.
        package var maxRefreshesPerMinute: Int

        package init(
            enabled: Bool = false,
            maxLoaded: Int = 1000,
            idleUnload: Duration = .seconds(900),
            maxRefreshesPerMinute: Int = 120
        ) {
            self.enabled = enabled
            self.maxLoaded = maxLoaded
            self.idleUnload = idleUnload
            self.maxRefreshesPerMinute = maxRefreshesPerMinute
        }

        /// What each user's store name begins with: `store.path` without `.store`
        /// (`/var/lib/bearerd/api.store` → `/var/lib/bearerd/api`, then `.uid-UID.store`).
        package static func storeStem(_ path: String) -> String {
            path.hasSuffix(".store") ? String(path.dropLast(".store".count)) : path
        }

        /// Whether `path` is, or could be, a per-user store of the session whose stem is `stem`.
        static func isUserStore(_ path: String, of stem: String) -> Bool {
            guard path.hasPrefix(stem + ".uid-"), path.hasSuffix(".store") else { return false }
            let digits = path.dropFirst(stem.count + ".uid-".count).dropLast(".store".count)
            // As a uid is written: no leading zero.
            return UInt32(digits).map { String($0) == digits } ?? false
        }

        init(reading builder: inout ConfigBuilder, enabled: Bool) {
            typealias Keys = ConfigKeys.Callers
            self.enabled = enabled
            self.maxLoaded = builder.count(Keys.maxLoaded)
            self.idleUnload = builder.duration(Keys.idleUnload)
            self.maxRefreshesPerMinute = builder.count(Keys.maxRefreshesPerMinute)
        }
    }
}

extension ConfigBuilder {
    /// What `per_caller: true` cannot go with: each user's tokens must come from their own login,
    /// be kept in a file of their own under the daemon's key, and go only to callers the kernel
    /// names.
    mutating func checkPerCaller(_ configuration: BearerdConfiguration) {
        guard configuration.callers.enabled else { return }
        let key = ConfigKeys.Callers.perCaller.name
        if configuration.socketAllowAnyUser || configuration.allowRemote {
            self.issue(
                key,
                "gives each local user their own tokens, so each caller must be named by the kernel: not with socket_allow_any_user or allow_remote; list who may log in with socket_allow_uids or socket_allow_gids"
            )
        }
        let store = configuration.store
        if store.postgres != nil {
            self.issue(
                "store.backend",
                "per_caller keeps each user's tokens in a file of their own: use the file store (store.backend: file)"
            )
        } else if !store.isEncryptedOnDisk {
            self.issue(
                key,
                "keeps each user's tokens in a file of their own, encrypted with the daemon's key: set store.key_file (create one with `bearerd keygen`) or store.passphrase_file"
            )
        }
        let auth = configuration.auth
        if auth.refreshTokenFile != nil {
            self.issue(
                "auth.refresh_token_file",
                "would start every user's session from one refresh token: with per_caller, each user logs in as themselves (bearerd login --session NAME)"
            )
        }
        if auth.dpop {
            self.issue(
                "auth.dpop",
                "is not available with per_caller yet: each user's key would need a store of its own"
            )
        }
        switch auth.source {
        case .staticFile:
            self.issue(
                "auth.static_token_file",
                "is one token for everyone: per_caller needs a token source each user logs in to (auth.token_url or auth.issuer, or auth.json)"
            )
        case .command:
            self.issue(
                "auth.command",
                "runs one command for everyone: per_caller needs a token source each user logs in to (auth.token_url or auth.issuer, or auth.json)"
            )
        case .oauth2(let client):
            if client.clientCredentials {
                self.issue(
                    "auth.client_credentials",
                    "is the client's own token, the same for every user: with per_caller, each user's requests carry only their own login's token"
                )
            }
            if client.tokenExchange != nil {
                self.issue(
                    "auth.token_exchange",
                    "is not available with per_caller: the subject token would be the same for every user"
                )
            }
            if client.clientID.isEmpty {
                self.issue(
                    "auth.client_id",
                    "required with per_caller: each user's store would otherwise register a client of its own"
                )
            }
        case .json:
            break
        }
    }
}

extension ConfigKeys {
    /// `per_caller` and the `callers:` limits.
    package enum Callers {
        static let perCaller = ConfigKeyDescriptor.bool(
            "per_caller",
            default: false,
            reload: .newSession,
            doc: """
                Keep a token set for each local user who calls this session, from their own login: a user runs
                `bearerd login` (with --session NAME in a config with sessions:) as themselves, the daemon takes
                their uid from the admin socket's peer (SO_PEERCRED), and each request carries the token of the
                uid the kernel names for its connection, never another user's. A caller who has not logged in
                gets a 503 that says so. Each user's tokens are in their own store file beside store.path
                (NAME.uid-UID.store, the daemon's key, mode 0600). Who may call and log in is socket_allow_uids
                and socket_allow_gids; the admin socket then admits them too, each for their own tokens only.
                """
        )
        static let maxLoaded = ConfigKeyDescriptor(
            "callers.max_loaded",
            .count(1...100_000),
            default: "1000",
            reload: .restart,
            doc: """
                At most this many users' sessions in memory; beyond it the least recently used is unloaded
                (its tokens stay in its store and come back on that user's next request).
                """
        )
        static let idleUnload = ConfigKeyDescriptor.duration(
            "callers.idle_unload",
            default: "15m",
            within: .seconds(10)...(.seconds(86_400)),
            reload: .restart,
            doc: "A user's session unused this long is unloaded from memory (not logged out)."
        )
        static let maxRefreshesPerMinute = ConfigKeyDescriptor(
            "callers.max_refreshes_per_minute",
            .count(1...100_000),
            default: "120",
            reload: .restart,
            doc: """
                The ceiling over all users of the session: at most this many requests to the token endpoint in
                any minute, whatever the number of users (auth.max_refreshes_per_minute applies to each user).
                An attempt over it waits and is retried, as after a network failure.
                """
        )

        static let section = ConfigSection(
            "callers",
            doc: "Limits of a per_caller session.",
            [.key(maxLoaded), .key(idleUnload), .key(maxRefreshesPerMinute)]
        )
    }
}
