import ArgumentParser
import BearerdConfig

/// `--session NAME`, for the verbs that act on one session of a config with `sessions:`.
struct SessionOption: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "The session to act on, in a config with sessions:.",
            discussion: "Not needed when the config has one session (a config without sessions: has one, default).",
            valueName: "name"
        )
    )
    var session: String?

    func validate() throws {
        if let name = self.session, !ConfiguredSessions.isValidName(name) {
            throw ValidationError(
                "--session: a session's name is 1 to 32 of a-z, 0-9, - and _, starting with a letter"
            )
        }
    }
}
