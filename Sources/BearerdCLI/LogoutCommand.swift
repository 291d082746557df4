import ArgumentParser
import BearerdTokens
import NIOHTTP1

/// `bearerd logout`: revoke at the server and wipe the user's tokens; the client token stays.
struct LogoutCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "logout",
        abstract: "Revoke the session at the token server and wipe the user's tokens.",
        discussion: """
            The tokens are wiped from the store first, then revoked (RFC 7009 at \
            auth.revocation_url or the discovered endpoint; auth.json.logout_url for a JSON API). \
            If the revocation fails, you are still logged out here and told so. A client token \
            (auth.client_credentials) stays.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var session: SessionOption
    @Option(help: "Root only, a per_caller session: log this user out instead of yourself.") var uid: UInt32?

    func run() async throws {
        try await SessionCommand.run(self.options, session: self.session.session) { channel in
            let path = "/v1/logout" + (self.uid.map { "?uid=\($0)" } ?? "")
            let result = try await channel.request(.POST, path, as: LogoutResult.self)
            if !result.loggedOut {
                print(result.detail)
            } else if result.revoked {
                print("logged out: \(result.detail)")
            } else {
                print("logged out here")
                StandardError.emit("bearerd: warning: \(result.detail)")
            }
        }
    }
}
