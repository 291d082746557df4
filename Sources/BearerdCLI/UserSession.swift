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

    init(environment: [String: String], home: String = NSHomeDirectory(), uid: uid_t = getuid()) {
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
    /// directory, made (mode 0700) if it is missing.
    func environment(_ base: [String: String]) -> [String: String] {
        var environment = base
        if environment["RUNTIME_DIRECTORY"] == nil { environment["RUNTIME_DIRECTORY"] = self.runtimeDirectory }
        environment["STATE_DIRECTORY"] = self.stateDirectory
        // A failure shows later, as the store's own error naming the path.
        try? FileManager.default.createDirectory(
            atPath: self.stateDirectory,
            withIntermediateDirectories: true,
            attributes: [.posixPermissions: 0o700]
        )
        return environment
    }
}
