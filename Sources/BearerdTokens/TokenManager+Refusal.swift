import Foundation
import Logging

extension TokenManager.Grant {
    /// What the token server refused when it answered a login (a password or an imported
    /// refresh token) with a 4xx, and what to check: `code` is the answer's `error`, or
    /// `HTTP <status>` when it names none. Only `invalid_grant` blames the user's credentials;
    /// any other refusal (`invalid_client`, a bare 401 or 403) may be the client's own
    /// authentication, so it names the keys that configure it (`credentialKeys`, no values).
    func refusal(code: String, credentialKeys: String) -> String {
        let grantRefused = code == "invalid_grant"
        if code == "invalid_client" || code == "unauthorized_client" {
            return "this client (\(code)): check \(credentialKeys)"
        }
        switch self {
        case .password:
            return grantRefused
                ? "the login (\(code)): check the user name and password"
                : "the login (\(code)): check \(credentialKeys); then the user name and password"
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
}

extension TokenManager {
    /// A 4xx: the credentials are no good. The only path that drops stored tokens, and only the
    /// user's: the client token stays.
    func rejected(status: Int, error: String?, grant: Grant, previous: Session?) -> AttemptResult {
        let code = error ?? "HTTP \(status)"
        Self.count("rejected")
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
            let why = "the token server rejected the refresh token (\(code))"
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
            let why = "the token server refused \(what)"
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
            let why = self.source.clientGrantRefusal(code: code)
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
