import Foundation
import Logging

extension TokenManager.Grant {
    /// The grant's name as RFC 6749 and the token server's settings call it.
    var grantType: String {
        switch self {
        case .refreshToken, .importedRefreshToken: "refresh_token"
        case .clientCredentials: "client_credentials"
        case .password: "password"
        case .authorizationCode: "authorization_code"
        }
    }

    /// What the token server refused when it answered with a 4xx, and which keys to check:
    /// `code` is the answer's `error` (RFC 6749 §5.2), or `HTTP <status>` when it names none.
    /// Each code points at what it is about: `invalid_scope` at auth.scopes, `invalid_client` at
    /// the client's keys (`credentialKeys`, names only), `unauthorized_client` and
    /// `unsupported_grant_type` at the grant, `invalid_grant` at the user's credentials or the
    /// refresh token. Without a code, a 401 is the client's authentication (RFC 6749 §5.2) and
    /// anything else may be either.
    func refusal(code: String, credentialKeys: String) -> String {
        switch code {
        case "invalid_scope":
            return "the scope asked for (invalid_scope): check auth.scopes"
        case "invalid_client", "HTTP 401":
            return "this client's authentication (\(code)): check \(credentialKeys)"
        case "unauthorized_client":
            return
                "the \(self.grantType) grant to this client (unauthorized_client): allow it for auth.client_id at the token server, or log in another way"
        case "unsupported_grant_type":
            return
                "the \(self.grantType) grant (unsupported_grant_type): the token server does not offer it; log in another way"
        case "invalid_request":
            return "a request it could not take (invalid_request): check auth.extra_params and auth.client_auth"
        default:
            break
        }
        let grantRefused = code == "invalid_grant"
        switch self {
        case .password:
            return grantRefused
                ? "the login (\(code)): check the user name and password"
                : "the login (\(code)): check the user name and password, then \(credentialKeys)"
        case .authorizationCode:
            return grantRefused
                ? "the authorization code (\(code)): it expired, was used already, or the client's redirect URI or PKCE does not match; run `bearerd login` again"
                : "the authorization code (\(code)): check \(credentialKeys)"
        case .importedRefreshToken, .refreshToken, .clientCredentials:
            return grantRefused
                ? "this refresh token (\(code)): it is expired, revoked or for another client"
                : "this refresh token (\(code)): check \(credentialKeys); or the token is expired, revoked"
                    + " or for another client"
        }
    }

    /// The server's own words (`error_description`, already bounded and cleaned), after ours.
    static func saying(_ description: String?) -> String {
        description.map { "; the token server says: \"\($0)\"" } ?? ""
    }
}

extension TokenManager {
    /// A 4xx: the credentials are no good. The only path that drops stored tokens, and only the
    /// user's: the client token stays.
    func rejected(
        status: Int,
        error: String?,
        description: String? = nil,
        grant: Grant,
        previous: Session?
    ) -> AttemptResult {
        let code = error ?? "HTTP \(status)"
        let saying = Grant.saying(description)
        self.count("rejected")
        if code == "invalid_client", case .refreshToken = grant, self.source.forgetRegistration() {
            // The client bearerd registered is gone at the server: the next login registers anew.
            self.stored.registration = nil
            self.persist()
            self.logger.warning(
                "the token server no longer knows the client bearerd registered; `bearerd login` registers a new one"
            )
        }
        switch grant {
        case .refreshToken:
            self.logger.error(
                "the token server rejected the refresh token; the stored tokens are wiped: run `bearerd login`",
                metadata: ["status": "\(status)", "error": "\(code)"]
            )
            let why = "the token server rejected the refresh token (\(code))\(saying)"
            self.lastRefresh = LastRefresh(
                at: self.clock.now,
                grant: self.name(of: grant),
                outcome: .rejected(code)
            )
            if previous?.kind == .client { self.stored.client = nil } else { self.stored.user = nil }
            self.persist()
            let left = self.fallback(reason: "the token server rejected the session (\(code)): run `bearerd login`")
            self.step { $0.settled(left, why: why, now: self.clock.now) }
            return .failed(why)
        case .password, .importedRefreshToken, .authorizationCode:
            let what = grant.refusal(code: code, credentialKeys: self.source.credentialKeys)
            let why = "the token server refused \(what)\(saying)"
            self.lastRefresh = LastRefresh(
                at: self.clock.now,
                grant: self.name(of: grant),
                outcome: .rejected(code)
            )
            let left = previous.map { .ready($0) } ?? self.fallback(reason: "no token: run `bearerd login`")
            self.step { $0.settled(left, why: why, now: self.clock.now) }
            return .failed(why)
        case .clientCredentials(let added)
        where !added.isEmpty && previous?.kind == .client && code != "invalid_client":
            // The scopes a step-up added were refused (invalid_scope, or the client may not have
            // them): the token in hand serves on, and they are not asked for a while.
            self.scopeRequests.refused(added, now: self.clock.now)
            self.logger.warning(
                "the token server refused the scope the API asked for; the client token serves on",
                metadata: ["status": "\(status)", "error": "\(code)", "scope": "\(added.joined(separator: " "))"]
            )
            self.lastRefresh = LastRefresh(
                at: self.clock.now,
                grant: self.name(of: grant),
                outcome: .rejected(code)
            )
            let left = previous.map { .ready($0) } ?? self.fallback(reason: "no token")
            self.step { $0.settled(left, why: nil, now: self.clock.now) }
            return .failed("the token server refused it (\(code))")
        case .clientCredentials:
            // Nothing stored to wipe; back off so a disabled client is not hammered.
            let why = self.source.clientGrantRefusal(code: code) + saying
            self.lastRefresh = LastRefresh(
                at: self.clock.now,
                grant: self.name(of: grant),
                outcome: .rejected(code)
            )
            // A token exchanged from the platform's token stays valid at the API until it
            // expires, whatever the server now thinks of the subject token: it serves meanwhile,
            // and a renewed file is tried at once. A refusal is not an outage: waiting callers
            // do not make bearerd ask again sooner.
            let subjectRefused = code == "invalid_grant" || code == "invalid_request"
            let keep = self.source.clientGrant == .tokenExchange && subjectRefused ? previous : nil
            self.step {
                _ = $0.backOff(
                    .refusal,
                    why: why,
                    reason: why,
                    keep: keep,
                    platformFiles: .stale,
                    now: self.clock.now,
                    random: self.random
                )
            }
            self.logger.error(
                "client token refused",
                metadata: ["grant": "\(self.name(of: grant))", "status": "\(status)", "error": "\(code)"]
            )
            return .failed(why)
        }
    }
}
