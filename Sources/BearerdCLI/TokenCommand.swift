import ArgumentParser
import BearerdAdmin
import NIOHTTP1

/// `bearerd token`: a valid access token on standard output, for scripts.
struct TokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "token",
        abstract: "Print a valid access token (through the running daemon).",
        discussion: """
            For scripts that need the token itself: `curl -H "Authorization: Bearer $(bearerd token)"`. \
            The token comes from the daemon, which refreshes it if it must; with no daemon, from \
            the store, under its lock.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var session: SessionOption

    func run() async throws {
        try await SessionCommand.run(self.options, session: self.session.session) { channel in
            let answer = try await channel.request(.GET, "/v1/token", as: AdminMessages.Token.self)
            print(answer.accessToken)
        }
    }
}
