import ArgumentParser

/// The `bearerd` command line.
package struct Bearerd: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "bearerd",
        abstract: "A localhost proxy that adds a valid OAuth bearer token to every request to an API.",
        discussion: """
            Point legacy tools at http://127.0.0.1:PORT (or a unix socket); bearerd forwards each \
            request to the configured upstream with `Authorization: Bearer <token>`. Several APIs, \
            each with its own credential and listener, are sessions of one daemon: a `sessions:` map \
            in the config (see bearerd.yaml(5)), named in the verbs with --session NAME. A session             with `per_caller: true` keeps a token set for each local user, who logs in as             themselves; each request carries its caller's token only.
            """,
        version: BearerdVersion.string,
        subcommands: [
            ServeCommand.self, LoginCommand.self, LogoutCommand.self, StatusCommand.self, TokenCommand.self,
            CheckConfigCommand.self, ConfigReferenceCommand.self, KeygenCommand.self, ReloadCommand.self,
            VersionCommand.self,
        ]
    )

    package init() {}
}

/// The version printed by `bearerd version` and `--version`.
package enum BearerdVersion {
    /// Semantic version of this build.
    package static let string = "0.2.0"
}
