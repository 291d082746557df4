import BearerdLogging
import BearerdSockets
import Logging
import NIOCore
import Synchronization

/// The log line of a caller `socket_allow_uids`/`socket_allow_gids` turned away: once per uid
/// per window (``ThrottledLogger``), for the first ``mostUIDs`` uids seen; the rest share one
/// kind, so a flood of uids cannot grow the throttle's table.
enum CallerRefusals {
    static let mostUIDs = 32

    static func log(
        _ caller: Caller?,
        viaTCP: Bool,
        failures: ThrottledLogger,
        now: NIODeadline,
        afterReload: Bool = false
    ) {
        let kind: String
        if let uid = caller?.uid, uid < 1 << 31 {
            kind = Self.kinds.withLock { kinds in
                if kinds.contains(uid) || kinds.count < Self.mostUIDs {
                    kinds.insert(uid)
                    return "caller_not_allowed_uid_\(uid)"
                }
                return "caller_not_allowed_other_uids"
            }
        } else {
            kind = "caller_unknown"
        }
        let message =
            if afterReload {
                "a caller the reloaded socket_allow_uids/socket_allow_gids no longer admit was closed, with its connection in use"
            } else if caller == nil {
                "a caller whose owner the kernel does not name (not on this host) was closed: only socket_allow_any_user serves such callers"
            } else {
                "a caller not in socket_allow_uids/socket_allow_gids was closed (both empty: only bearerd's own uid and root)"
            }
        var metadata: Logger.Metadata = ["listener": .string(viaTCP ? "tcp" : "unix")]
        if let caller {
            metadata["caller_uid"] = .stringConvertible(caller.uid)
            if let pid = caller.pid { metadata["caller_pid"] = .stringConvertible(pid) }
        }
        failures.warning(kind: kind, message, metadata: metadata, now: now)
    }

    /// A connection to a loopback address from a peer off the loopback network.
    static func logNotLoopback(_ peer: SocketAddress, failures: ThrottledLogger, now: NIODeadline) {
        failures.warning(
            kind: "peer_not_loopback",
            "a connection to a loopback listener came from an address off the loopback network and was closed: this host routes other hosts or containers to 127.0.0.1 (route_localnet, CVE-2020-8558)",
            metadata: ["peer": .string(peer.bearerdDescription)],
            now: now
        )
    }

    private static let kinds = Mutex<Set<UInt32>>([])
}
