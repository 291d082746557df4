import BearerdFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// bearerd as a service of one person's session (`systemctl --user`, `bearerd --user`): the
/// config in `$XDG_CONFIG_HOME/bearerd/bearerd.yaml`, the admin socket in
/// `$XDG_RUNTIME_DIR/bearerd` (the user unit's `RuntimeDirectory=`) and the store in
/// `$XDG_STATE_HOME/bearerd`. The XDG defaults apply when a variable is unset or not absolute
/// (the Base Directory Specification says to ignore relative ones).
///
/// The state directory is bearerd's to make, not the unit's `StateDirectory=`: systemd before
/// 254 puts a user unit's state under `$XDG_CONFIG_HOME`, and the CLI run outside the unit must
/// find the same store as the daemon inside it.
struct UserSession: Equatable, Sendable {
    let configDirectory: String
    let runtimeDirectory: String
    let stateDirectory: String

    init(environment: [String: String], home: String = Self.accountHome(), uid: uid_t = getuid()) {
        func absolute(_ name: String) -> String? {
            environment[name].flatMap { $0.hasPrefix("/") ? $0 : nil }
        }
        self.configDirectory = (absolute("XDG_CONFIG_HOME") ?? home + "/.config") + "/bearerd"
        self.runtimeDirectory = (absolute("XDG_RUNTIME_DIR") ?? "/run/user/\(uid)") + "/bearerd"
        self.stateDirectory = (absolute("XDG_STATE_HOME") ?? home + "/.local/state") + "/bearerd"
    }

    var configPath: String { self.configDirectory + "/bearerd.yaml" }

    /// The environment a verb reads the config with: the runtime directory the user unit gives
    /// its process (unless the environment has its own, as it has inside the unit) and the state
    /// directory (``prepareStateDirectory()``).
    func environment(_ base: [String: String]) -> [String: String] {
        var environment = base
        if environment["RUNTIME_DIRECTORY"] == nil { environment["RUNTIME_DIRECTORY"] = self.runtimeDirectory }
        environment["STATE_DIRECTORY"] = self.stateDirectory
        return environment
    }

    /// Makes the state directory (mode 0700) when it is missing, then checks it as the store's
    /// own directory must be: a directory, not a link, owned by this user; a mode open to others
    /// is narrowed to 0700. Returns what is wrong, for a person.
    func prepareStateDirectory(uid: uid_t = getuid()) -> String? {
        let path = self.stateDirectory
        try? FileManager.default.createDirectory(
            atPath: path,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        guard let info = PathStatus.of(path) else {
            return "cannot make the state directory \(path): \(String(cString: strerror(errno)))"
        }
        guard info.kind == .directory else {
            return "the state directory \(path) is not a directory (a link or a file is there): remove it"
        }
        guard info.owner == uid else {
            return
                "the state directory \(path) belongs to uid \(info.owner), not to you (uid \(uid)): "
                + "remove it, or set XDG_STATE_HOME to a directory of yours"
        }
        if info.permissions & 0o077 != 0 && chmod(path, 0o700) != 0 {
            return "the state directory \(path) is open to others and cannot be narrowed to 0700"
        }
        return nil
    }

    /// This account's home directory from the password database (not `$HOME`, which `sudo` may
    /// carry over from another user).
    static func accountHome() -> String {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return NSHomeDirectory() }
        return String(cString: directory)
    }
}
