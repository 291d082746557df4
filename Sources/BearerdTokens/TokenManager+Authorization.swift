import BearerdAuth
import Foundation
import Logging

extension TokenManager {
    /// Begins a browser login (`bearerd login`): makes a `state` and a PKCE verifier, keeps them
    /// for `auth.login_timeout` (and a little more, for the CLI's own deadline to come first), and
    /// returns the URL the browser opens. `redirectURI` must be a loopback `/callback`
    /// (``PKCE/isLoopbackRedirect(_:)``): the CLI's listener.
    package func beginAuthorization(redirectURI: String) async throws(TokenEngineError) -> AuthorizationPrompt {
        guard PKCE.isLoopbackRedirect(redirectURI) else {
            throw TokenEngineError.login(
                "the redirect URI must be http://127.0.0.1:PORT/callback or http://[::1]:PORT/callback"
            )
        }
        let server: AuthorizationServer
        do {
            if let registration = try await self.source.registerIfNeeded(transport: self.transport),
                registration != self.stored.registration
            {
                self.stored.registration = registration
                self.persist()
                if !registration.isPin {
                    self.logger.notice(
                        "registered a client at the API's authorization server (RFC 7591)",
                        metadata: ["issuer": "\(registration.issuer)", "client_id": "\(registration.clientID)"]
                    )
                }
            }
            server = try await self.source.authorizationServer(transport: self.transport)
        } catch {
            throw TokenEngineError.login("cannot start a browser login: \(error)", underlying: error)
        }
        self.askAtNextLogin()
        let verifier = Secret(PKCE.randomText())
        let state = PKCE.randomText()
        let timeout = self.source.authorizationTimeout
        let lifetime = Int(timeout.components.seconds) + 30
        let now = self.clock.now
        self.authorizations.add(
            PendingAuthorization(
                state: state,
                verifier: verifier,
                redirectURI: redirectURI,
                server: server,
                deadline: now.addingTimeInterval(TimeInterval(lifetime))
            ),
            now: now
        )
        let url = self.source.authorizationURL(
            server,
            state: state,
            challenge: PKCE.challenge(verifier),
            redirectURI: redirectURI
        )
        return AuthorizationPrompt(authorizationURL: url, state: state, redirectURI: redirectURI, expiresIn: lifetime)
    }

    /// Finishes a browser login: the redirect's `code`, `state` and `iss` (RFC 9207). The state
    /// must be one this engine began and has not finished (a code is redeemed once); `iss`, when
    /// sent or required, must be the issuer. The code is redeemed with the verifier through the
    /// same critical section as every refresh; a refusal keeps the session in hand.
    package func logIn(authorizationCode code: Secret, state: String, issuer: String?) async throws(TokenEngineError) {
        guard let pending = self.authorizations.take(state: state, now: self.clock.now) else {
            throw TokenEngineError.login(
                "this browser login is unknown or over (a wrong state, a second redirect, or after auth.login_timeout): run `bearerd login` again"
            )
        }
        if let expected = pending.server.issuer {
            if let issuer, !Discovery.sameIdentifier(issuer, expected) {
                throw TokenEngineError.login(
                    "the redirect came from another issuer than auth.issuer (RFC 9207 iss): nothing was stored; check that the browser logged in at the right server"
                )
            }
            if issuer == nil, pending.server.issuerRequired {
                throw TokenEngineError.login(
                    "the redirect has no iss, which auth.issuer's metadata promises (RFC 9207): nothing was stored; run `bearerd login` again"
                )
            }
        }
        try await self.logInWith(
            .authorizationCode(code: code, verifier: pending.verifier, redirectURI: pending.redirectURI)
        )
    }
}
