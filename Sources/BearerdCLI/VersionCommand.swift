import ArgumentParser

/// `bearerd version`
struct VersionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "version",
        abstract: "Print bearerd's version and the commit it was built from."
    )

    func run() {
        print("bearerd \(BearerdVersion.string) (commit \(BearerdVersion.commit))")
    }
}
