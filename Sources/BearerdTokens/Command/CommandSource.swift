import BearerdAuth
import Foundation

/// `auth.command`: the token is what a program on the host prints. The engine runs it as it
/// asks any token server for a client token: proactively a margin before expiry, one run at a
/// time, with its backoff. The run itself is the transport's (``TokenTransport``): the request
/// this source builds only names the program, and a run that fails is an unavailable server
/// (the current token is kept). A program never refuses with a 4xx, so nothing is wiped.
package struct CommandSource: TokenSource {
    package let settings: CommandSettings
    package let record: CommandRecord

    package init(settings: CommandSettings, record: CommandRecord = CommandRecord()) {
        self.settings = settings
        self.record = record
    }

    package var clientGrant: ClientGrant? { .command }

    package var hasUserSessions: Bool { false }

    package var credentialKeys: String { "auth.command" }

    /// The request the transport reads: the program only; the settings are the transport's.
    package func clientCredentialsRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        TokenHTTPRequest(method: "EXEC", url: "command:\(self.settings.program)")
    }

    package func parseIssued(_ body: [UInt8]) throws -> IssuedTokens { try CommandOutput.parse(body) }

    package func clientGrantStatus(now: Date) -> ClientGrantStatus? {
        var status = ClientGrantStatus(
            source: "command",
            subjectTokenFile: nil,
            subjectTokenExpiresAt: nil,
            subjectTokenSubject: nil
        )
        status.command = self.settings.program
        if let run = self.record.lastRun {
            status.commandRanAt = run.at
            status.commandEnded = run.ended
            status.commandStderr = run.stderr
        }
        return status
    }

    package func refreshRequest(_ refreshToken: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        throw TokenEngineError.source("auth.command issues no refresh token: the command is run again instead")
    }

    package func passwordRequest(
        username: String,
        password: Secret,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest {
        throw Self.noLogin
    }

    package func revocationRequest(
        refreshToken: Secret?,
        accessToken: BearerToken?,
        transport: any TokenTransport
    ) async throws -> TokenHTTPRequest? { nil }

    package func deviceAuthorizationRequest(transport: any TokenTransport) async throws -> TokenHTTPRequest {
        throw Self.noLogin
    }

    package func deviceTokenRequest(deviceCode: Secret, transport: any TokenTransport) async throws -> TokenHTTPRequest
    {
        throw Self.noLogin
    }

    package func authorizationServer(transport: any TokenTransport) async throws -> AuthorizationServer {
        throw Self.noLogin
    }

    private static var noLogin: TokenEngineError {
        .source(
            "auth.command needs no login: bearerd runs the command whenever it needs a token (log in with the command's own tool, such as `gcloud auth login`)"
        )
    }
}
