import BearerdProxy
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
    /// `socket_allow_uids` / `socket_allow_gids`: when either is set, a caller whose uid (or
    /// gid) is not listed is closed unanswered: `SO_PEERCRED` on a unix socket, the owner of the
    /// client's socket on TCP.
    package var socketAllowUIDs: Set<UInt32>
    package var socketAllowGIDs: Set<UInt32>
    /// `socket_allow_any_user`: serve callers without asking who they are. Otherwise, with both
    /// lists empty, only bearerd's own uid and root are served.
    package var socketAllowAnyUser = false
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
    /// `tracing.*`: OpenTelemetry traces; off unless `tracing.endpoint` is set.
    package var tracing: Tracing = .off
    /// `per_caller` and `callers.*`.
    package var callers = Callers()
    /// Each key's value as written, for a reload to compare (``ConfigLoader`` sets it).
    package var written = WrittenValues()

}
