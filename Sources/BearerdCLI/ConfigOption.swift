import ArgumentParser
import BearerdConfig
import Foundation

/// `--config PATH` or `--instance NAME`, shared by the commands that read the config file.
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

    func validate() throws {
        if self.config != nil && self.instance != nil {
            throw ValidationError("give --config or --instance, not both")
        }
        if let name = self.instance, let problem = Instance.problem(name) {
            throw ValidationError("--instance: \(problem)")
        }
    }

    /// The path to read: the option, the instance's file, then `$BEARERD_CONFIG`, then the default.
    var path: String {
        if let name = self.instance { return Instance(name: name).configPath }
        return self.config ?? ProcessInfo.processInfo.environment["BEARERD_CONFIG"] ?? ConfigLoader.defaultPath
    }

    /// The environment the config is read with: the process's, with an instance's directories.
    var environment: [String: String] {
        let environment = ProcessInfo.processInfo.environment
        guard let name = self.instance else { return environment }
        return Instance(name: name).environment(environment)
    }
}
