import ArgumentParser
import BearerdConfig
import Foundation

/// `--config PATH`, shared by the commands that read the config file.
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

    /// The path to read: the option, then `$BEARERD_CONFIG`, then the default.
    var path: String {
        self.config ?? ProcessInfo.processInfo.environment["BEARERD_CONFIG"] ?? ConfigLoader.defaultPath
    }
}
