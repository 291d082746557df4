import ArgumentParser
import BearerdAuth
import BearerdConfig
import BearerdProxy
import Logging

/// `bearerd check-config`: validates the config file (and the files it names) without serving.
struct CheckConfigCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Check the config file and print OK or every problem found.",
        discussion: """
            Reads the file and the BEARERD_* environment overrides exactly as `serve` would, \
            checks every key, and opens the files it names (CA bundle, token file). Exits 0 and \
            prints OK when `serve` would start; otherwise prints one line per problem, each naming \
            its key, and exits 1.
            """
    )

    @OptionGroup var options: ConfigOption

    func run() throws {
        switch Startup.prepare(configPath: self.options.path, logger: Logger(label: "bearerd.check-config")) {
        case .success:
            print("OK")
        case .failure(let failure):
            StandardError.emit(failure.report)
            throw ExitCode.failure
        }
    }
}
