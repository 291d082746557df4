import BearerdAuth
import Foundation
import Logging

/// How `bearerd logout` went.
package struct LogoutResult: Sendable, Codable, Equatable {
    /// Whether there was a user session to end.
    package var loggedOut: Bool
    /// Whether the token server confirmed the revocation.
    package var revoked: Bool
    /// What happened, for a person.
    package var detail: String

    package init(loggedOut: Bool, revoked: Bool, detail: String) {
        self.loggedOut = loggedOut
        self.revoked = revoked
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey {
        case loggedOut = "logged_out"
        case revoked
        case detail
    }
}

extension TokenManager {
    /// Logs in with the password grant (or a JSON API's sign-in), through the same critical
    /// section as refreshes. A refusal keeps the session in hand.
    package func logIn(username: String, password: Secret) async throws(TokenEngineError) {
        try await self.logInWith(.password(username: username, password: password))
    }

    /// Logs in with a refresh token from elsewhere (`--refresh-token-stdin`): it is sent at
    /// once, so a bad one is refused now and the one stored is the server's fresh answer.
    package func logIn(refreshToken: Secret) async throws(TokenEngineError) {
        try await self.logInWith(.importedRefreshToken(refreshToken))
    }

    func logInWith(_ grant: Grant) async throws(TokenEngineError) {
        await self.awaitInFlight()
        guard let task = self.start(grant, reason: .login) else {
            throw TokenEngineError.login(
                "login held back: \(self.machine.lastOutcome ?? "too many token requests"); try again in a minute"
            )
        }
        if case .failed(let why) = await task.value { throw TokenEngineError.login(why) }
    }

    /// Logs in with the device authorization grant (RFC 8628): asks for a code, hands it to
    /// `prompt` (for the person to enter at the server's page), then polls at the server's
    /// interval — five seconds slower after each `slow_down` — until the person approves,
    /// refuses, or the code expires. Cancelling the task stops the polling.
    package func logInWithDevice(prompt: @Sendable (DevicePrompt) async -> Void) async throws(TokenEngineError) {
        let authorization: DeviceAuthorization
        do {
            let request = try await self.source.deviceAuthorizationRequest(transport: self.transport)
            let response = try await self.transport.send(request)
            guard response.status == 200 else {
                let code = TokenResponseClassifier.errorCode(response.body).map { " (\($0))" } ?? ""
                throw TokenEngineError.source("the device authorization endpoint answered \(response.status)\(code)")
            }
            authorization = try DeviceAuthorization.parse(response.body)
        } catch {
            throw TokenEngineError.login("cannot start a device login: \(error)", underlying: error)
        }
        await prompt(authorization.prompt)
        let deadline = self.clock.now.addingTimeInterval(TimeInterval(authorization.prompt.expiresIn))
        var interval = authorization.interval
        while true {
            let next = self.clock.now.addingTimeInterval(TimeInterval(interval))
            guard next < deadline else {
                throw TokenEngineError.login(
                    "the code expired before it was approved: run `bearerd login --device` again"
                )
            }
            do {
                try await self.clock.sleep(until: next)
            } catch {
                throw TokenEngineError.login("the device login was cancelled")
            }
            let outcome = await Self.poll(
                authorization.deviceCode,
                source: self.source,
                transport: self.transport,
                clock: self.clock
            )
            switch outcome {
            case .issued(let issued, let serverDate):
                if self.verifier != nil,
                    let why = await Self.verificationProblem(
                        outcome,
                        verifier: self.verifier,
                        transport: self.transport
                    )
                {
                    throw TokenEngineError.login("the access token the token server issued failed auth.verify: \(why)")
                }
                await self.awaitInFlight()
                self.install(
                    issued,
                    kind: .user,
                    refreshToken: issued.refreshToken,
                    serverDate: serverDate,
                    grant: "device_code",
                    reason: .login
                )
                await self.publishShared()
                return
            case .rejected(_, "authorization_pending", _):
                continue
            case .rejected(_, "slow_down", _):
                interval += 5
            case .rejected(_, "access_denied", _):
                throw TokenEngineError.login("the device login was refused at the server")
            case .rejected(_, "expired_token", _):
                throw TokenEngineError.login(
                    "the code expired before it was approved: run `bearerd login --device` again"
                )
            case .rejected(let status, let error, _):
                throw TokenEngineError.login("the token server refused the device login (\(error ?? "HTTP \(status)"))")
            case .unavailable(let why, _), .unreadable(let why), .unreachable(let why):
                // RFC 8628 §3.5: back off on errors that are not answers.
                interval = min(interval * 2, 60)
                self.logger.warning("device login poll failed; polling more slowly", metadata: ["reason": "\(why)"])
            }
        }
    }

    private nonisolated static func poll(
        _ deviceCode: Secret,
        source: any TokenSource,
        transport: any TokenTransport,
        clock: any TokenClock
    ) async -> TokenOutcome {
        do {
            let request = try await source.deviceTokenRequest(deviceCode: deviceCode, transport: transport)
            let response = try await transport.send(request)
            return TokenResponseClassifier.classify(response, now: clock.wallNow, parse: source.parseIssued)
        } catch {
            return .unavailable(reason: "cannot reach the token endpoint: \(error)", retryAfter: nil)
        }
    }

    /// Ends the user's session: the tokens are dropped here first (a crash afterwards cannot
    /// bring them back), then revoked at the server (RFC 7009, or the API's logout). The client
    /// token stays.
    package func logOut() async -> LogoutResult {
        await self.awaitInFlight()
        guard !self.storeClosed else {
            return LogoutResult(
                loggedOut: false,
                revoked: false,
                detail:
                    "this session has stopped (bearerd is stopping, or a reload removed it): nothing was logged out; run the logout again once it runs"
            )
        }
        guard let session = self.currentSession, session.kind == .user else {
            return LogoutResult(loggedOut: false, revoked: false, detail: "not logged in: nothing to log out")
        }
        self.stored.user = nil
        self.persist()
        // Out of `.ready` before the fleet's lock is awaited, so no refresh of the user's session
        // starts meanwhile.
        let left = self.fallback(reason: "logged out: run `bearerd login`")
        self.step { $0.replaced(with: left, now: self.clock.now) }
        await self.publishShared()
        let (revoked, detail) = await Self.revoke(session, source: self.source, transport: self.transport)
        self.logger.notice("logged out", metadata: ["revoked": "\(revoked)", "detail": "\(detail)"])
        return LogoutResult(loggedOut: true, revoked: revoked, detail: detail)
    }

    private nonisolated static func revoke(
        _ session: Session,
        source: any TokenSource,
        transport: any TokenTransport
    ) async -> (Bool, String) {
        let stays = "the session may stay valid at the token server until it expires"
        do {
            guard
                let request = try await source.revocationRequest(
                    refreshToken: session.refreshToken,
                    accessToken: session.access,
                    transport: transport
                )
            else {
                return (false, "no revocation endpoint is configured or discovered (\(source.revocationKey)): \(stays)")
            }
            let response = try await transport.send(request)
            guard (200..<300).contains(response.status) else {
                let code = TokenResponseClassifier.errorCode(response.body).map { ", \($0)" } ?? ""
                return (false, "the token server did not revoke the session (HTTP \(response.status)\(code)): \(stays)")
            }
            return (true, "the token server revoked the session")
        } catch {
            return (false, "cannot reach the revocation endpoint (\(error)): \(stays)")
        }
    }
}
