import ArgumentParser
import BearerdConfig
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `--config PATH`, `--instance NAME` or `--user`, shared by the commands that read the config
/// file.
struct ConfigOption: ParsableArguments {
    @Option(
        name: [.customShort("c"), .long],
        help: ArgumentHelp(
            "The config file (YAML).",
            discussion: "Default: $BEARERD_CONFIG, else \(ConfigLoader.defaultPath).",
            valueName: "path"
        )
    )
    var config: String?

    @Option(
        name: [.customShort("i"), .long],
        help: ArgumentHelp(
            "An instance of the template unit bearerd@NAME.service.",
            discussion:
                "Reads \(Instance.directory)/NAME.yaml, and places the admin socket and the store where the unit does (/run/bearerd@NAME, /var/lib/bearerd@NAME) unless the config says otherwise.",
            valueName: "name"
        )
    )
    var instance: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "The service of your own session (systemctl --user).",
            discussion:
                "Reads $XDG_CONFIG_HOME/bearerd/bearerd.yaml (~/.config/bearerd/bearerd.yaml), and places the admin socket in $XDG_RUNTIME_DIR/bearerd and the store in $XDG_STATE_HOME/bearerd (~/.local/state/bearerd), as the user unit does, unless the config says otherwise."
        )
    )
    var user = false

    func validate() throws {
        if [self.config != nil, self.instance != nil, self.user].filter({ $0 }).count > 1 {
            throw ValidationError("give one of --config, --instance and --user")
        }
        if let name = self.instance, let problem = Instance.problem(name) {
            throw ValidationError("--instance: \(problem)")
        }
        if self.user {
            // Root's files are the system service's: a --user as root would act on whichever
            // user's files $HOME or $XDG_* point at, and leave root-owned ones in their home.
            guard geteuid() != 0 else {
                throw ValidationError("--user is for your own session, not root: use --config or --instance")
            }
            let session = UserSession(environment: ProcessInfo.processInfo.environment)
            if let problem = session.prepareStateDirectory() { throw ValidationError("--user: \(problem)") }
        }
    }

    /// The path to read: the option, the instance's or the session's file, then
    /// `$BEARERD_CONFIG`, then the default.
    var path: String {
        if let name = self.instance { return Instance(name: name).configPath }
        if self.user { return UserSession(environment: ProcessInfo.processInfo.environment).configPath }
        return self.config ?? ProcessInfo.processInfo.environment["BEARERD_CONFIG"] ?? ConfigLoader.defaultPath
    }

    /// The environment the config is read with: the process's, with an instance's directories.
    var environment: [String: String] {
        let environment = ProcessInfo.processInfo.environment
        if self.user { return UserSession(environment: environment).environment(environment) }
        guard let name = self.instance else { return environment }
        return Instance(name: name).environment(environment)
    }
}
