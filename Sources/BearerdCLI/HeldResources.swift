import BearerdConfig
import BearerdProxy
import BearerdSockets
import BearerdStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `check-config` finds held by another program that `serve` would need: a TCP port of
/// `listen` or `metrics.listen`, the admin socket, the token store. A bearerd already serving
/// this same config holds them rightly (checking before a reload is the common case); anyone
/// else is named, with the key to change. Read from the kernel's tables (/proc/net/tcp,
/// /proc/locks, the socket's `SO_PEERCRED`), so nothing is locked or bound for longer than a
/// probe.
enum HeldResources {
    /// The bearerd that answers on an admin socket: its pid, and the config file its command
    /// line names (`nil` when it cannot be told: another user's environment).
    struct Daemon: Equatable {
        var pid: Int32
        var configPath: String?
    }

    static func findings(_ configuration: BearerdConfiguration, configPath: String) -> StoreCheck.Findings {
        var findings = StoreCheck.Findings()
        let socket = configuration.admin.socket
        var own: Int32?
        if let daemon = Self.daemon(at: socket) {
            switch daemon.configPath.map({ Self.samePath($0, configPath) }) {
            case true?:
                own = daemon.pid
                findings.notes.append(
                    "a bearerd (pid \(daemon.pid)) serves this config now: the ports and the store it holds are its own; `bearerd reload` applies a change"
                )
            case false?:
                findings.errors.append(
                    "admin.socket: \(socket) is the admin socket of another bearerd (pid \(daemon.pid), config \(daemon.configPath ?? "")): give this config an admin.socket of its own"
                )
            case nil:
                own = daemon.pid
                findings.notes.append(
                    "admin.socket: a bearerd (pid \(daemon.pid)) answers on \(socket); which config it serves cannot be read as this user"
                )
            }
        }
        // A bearerd serving this same file holds rightly, whatever its admin socket (one
        // changed in the file and not yet restarted).
        func servesThisConfig(_ pid: Int32) -> Bool {
            pid == own || Self.daemonConfig(pid: pid).map { Self.samePath($0, configPath) } == true
        }
        if configuration.store.postgres == nil, let holder = Self.lockHolder(of: configuration.store.path + ".lock"),
            !servesThisConfig(holder)
        {
            let config = Self.daemonConfig(pid: holder).map { ", config \($0)" } ?? ""
            findings.errors.append(
                "store.path: \(configuration.store.path) is held by another bearerd (pid \(holder)\(config)): give this config a store of its own (store.path); two daemons on one store would send one refresh token twice"
            )
        }
        var addresses: [(key: String, host: String, port: Int)] = []
        for case .tcp(let host, let port) in configuration.listen where port != 0 {
            addresses.append(("listen", host, port))
        }
        if case .tcp(let host, let port)? = configuration.admin.metricsListen, port != 0 {
            addresses.append(("metrics.listen", host, port))
        }
        for address in addresses {
            let shown =
                address.host.contains(":") ? "[\(address.host)]:\(address.port)" : "\(address.host):\(address.port)"
            guard Self.isInUse(host: address.host, port: address.port) else { continue }
            let holders = Self.listeners(port: address.port)
            if holders.contains(where: servesThisConfig) { continue }
            if holders.contains(1) {
                findings.notes.append(
                    "\(address.key): systemd holds \(shown) (socket activation) and passes it to bearerd"
                )
            } else if let holder = holders.first {
                let name = Self.command(pid: holder).map { " (\($0))" } ?? ""
                findings.errors.append(
                    "\(address.key): \(shown) is in use by pid \(holder)\(name): choose another address for \(address.key), or stop that program"
                )
            } else if own != nil || ProcessInfo.processInfo.environment["SYSTEMD_EXEC_PID"] == "\(getpid())" {
                // Run by systemd itself (ExecStartPre=: $SYSTEMD_EXEC_PID is this process, not
                // an ancestor as in a terminal a user service started), an unseen holder is most
                // likely the unit's own .socket; beside a running daemon of this config, its own
                // listener.
                findings.notes.append(
                    "\(address.key): \(shown) is in use by a process this user cannot see (a systemd .socket unit, or the running bearerd)"
                )
            } else {
                findings.errors.append(
                    "\(address.key): \(shown) is in use by a process this user cannot see (run check-config as root to name it): choose another address for \(address.key), or stop that program"
                )
            }
        }
        if let file = configuration.log.accessFile, let problem = Self.appendProblem(file) {
            findings.errors.append("log.access_file: \(problem)")
        }
        return findings
    }

    // MARK: - The access log

    /// Why `serve` could not open `file` for appending: its folder missing or not writable, or
    /// the file not writable.
    static func appendProblem(_ file: String) -> String? {
        if FileManager.default.fileExists(atPath: file) {
            return access(file, W_OK) == 0 ? nil : "\(file) is not writable by this user: chown or chmod it"
        }
        let directory = (file as NSString).deletingLastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
            return "the folder of \(file) does not exist: create it, or correct the path"
        }
        return access(directory, W_OK | X_OK) == 0 ? nil : "cannot create \(file): \(directory) is not writable"
    }
}
