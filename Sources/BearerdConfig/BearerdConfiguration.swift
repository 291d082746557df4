import Logging

/// Everything `bearerd serve` needs, validated. Built by ``ConfigLoader``; every field has the
/// default documented in `config/bearerd.example.yaml`.
package struct BearerdConfiguration: Sendable {
    /// Where to accept connections (`listen`).
    package var listen: [ListenAddress]
    /// Whether non-loopback TCP addresses are allowed (`allow_remote`).
    package var allowRemote: Bool
    /// Mode of unix sockets (`socket_mode`).
    package var socketMode: UInt32
    /// Group of unix sockets (`socket_group`), resolved to a gid; `nil` keeps the process's group.
    package var socketGroup: UInt32?
    /// `socket_allow_uids` / `socket_allow_gids`: when either is set, a unix-socket caller whose
    /// uid (or primary gid) is not listed is closed unanswered (checked with `SO_PEERCRED`).
    package var socketAllowUIDs: Set<UInt32>
    package var socketAllowGIDs: Set<UInt32>
    /// Event-loop threads (`threads`); 0 means one per core.
    package var threads: Int
    /// How long in-flight requests may run after SIGTERM (`shutdown_grace`).
    package var shutdownGrace: Duration

    /// The upstream and how to talk to it.
    package var upstream: Upstream
    /// How requests are rewritten and limited.
    package var proxy: Proxy
    /// Where the token comes from.
    package var auth: Auth
    /// Where tokens are kept.
    package var store: Store
    /// The admin socket the CLI talks to.
    package var admin: Admin
    /// Logging.
    package var log: Log
    /// Each key's value as written, for a reload to compare (``ConfigLoader`` sets it).
    package var written = WrittenValues()

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
    }

    /// `admin.*` and `metrics.listen`
    package struct Admin: Sendable {
        /// `admin.socket`, resolved: the unix socket `login`, `logout`, `status` and `token` use.
        package var socket: String
        /// `metrics.listen`: a TCP address for `/metrics`, `/health` and `/ready` (none by
        /// default; the admin socket serves them too).
        package var metricsListen: ListenAddress?
    }

    /// `log.*`
    package struct Log: Sendable {
        /// `log.level`.
        package var level: Logger.Level
        /// `log.access`: one line per request.
        package var access: Bool
        /// `log.access_query`: include the query string in access lines.
        package var accessQuery: Bool
    }
}

/// What the proxy does with an `Authorization` header sent by the client (`proxy.client_authorization`).
package enum ClientAuthorizationPolicy: String, Sendable, Hashable, CaseIterable {
    /// Drop it and send bearerd's token (default).
    case replace
    /// Forward the client's header unchanged and add no token.
    case keep
    /// Refuse the request with 400.
    case reject
}
