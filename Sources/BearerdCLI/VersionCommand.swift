import ArgumentParser

/// `bearerd version`
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "version", abstract: "Print bearerd's version.")

    func run() {
        print("bearerd \(BearerdVersion.string)")
    }
}
