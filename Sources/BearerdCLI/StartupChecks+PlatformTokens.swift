import BearerdConfig
import BearerdStore
import BearerdTokens
import Foundation

extension StartupChecks {
    /// The platform's token files (`auth.token_exchange.*_file`, `auth.client_assertion_file`):
    /// one that cannot be read as a token is a problem; one that has expired is a note, since
    /// `serve` starts and waits for the platform to renew it. Never the token itself: its `sub`
    /// and `exp`.
    static func platformTokenFindings(_ auth: BearerdConfiguration.Auth, now: Date = Date()) -> StoreCheck.Findings {
        var findings = StoreCheck.Findings()
        guard case .oauth2(let oauth2) = auth.source else { return findings }
        var files: [PlatformTokenFile] = []
        if let exchange = oauth2.tokenExchange {
            files.append(
                PlatformTokenFile(path: exchange.subjectTokenFile, key: "auth.token_exchange.subject_token_file")
            )
            if let actor = exchange.actorTokenFile {
                files.append(PlatformTokenFile(path: actor, key: "auth.token_exchange.actor_token_file"))
            }
        }
        if let assertion = oauth2.clientAssertionFile {
            files.append(PlatformTokenFile(path: assertion, key: "auth.client_assertion_file"))
        }
        let formatter = ISO8601DateFormatter()
        for file in files {
            do throws(TokenEngineError) {
                let token = try file.read(now: .distantPast)
                guard let expiresAt = token.expiresAt else {
                    findings.notes.append("\(file.key): not a JWT with an exp; sent as it is")
                    continue
                }
                let who = token.subject.map { "sub \($0), " } ?? ""
                if expiresAt <= now {
                    findings.notes.append(
                        "\(file.key): the token (\(who)expired at \(formatter.string(from: expiresAt))) has expired; "
                            + "bearerd starts and waits for the platform to renew \(file.path)"
                    )
                } else {
                    findings.notes.append("\(file.key): a JWT, \(who)expires at \(formatter.string(from: expiresAt))")
                }
            } catch {
                findings.errors.append(error.message)
            }
        }
        return findings
    }
}
