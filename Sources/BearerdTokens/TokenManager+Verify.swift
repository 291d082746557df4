import BearerdAuth
import Foundation
import Logging

/// `auth.verify`: what the token server issued is checked before it is used.
extension TokenManager {
    /// Why `issued`'s access token must not be used, or `nil`. Callers ask only with a verifier:
    /// without one there is no suspension between the answer and its use.
    nonisolated static func verificationProblem(
        _ outcome: TokenOutcome,
        verifier: (any TokenVerifier)?,
        transport: any TokenTransport
    ) async -> String? {
        guard let verifier, case .issued(let issued, let serverDate) = outcome else { return nil }
        do throws(TokenEngineError) {
            // Judged on the server's own clock when it said it: a step of this machine's wall
            // clock does not make its fresh tokens look expired (or not yet valid).
            try await verifier.verify(issued.accessToken, transport: transport, at: serverDate)
            return nil
        } catch {
            return error.description
        }
    }

    /// An answer whose access token failed verification. The access token is dropped; a refresh
    /// token the answer rotated is kept (the server has spent the one sent, so sending it again
    /// would be reuse); the current token serves until it expires, and the refresh is retried
    /// with backoff like any failed one. A login fails and keeps the session it had.
    func unverified(
        _ outcome: TokenOutcome,
        why: String,
        grant: Grant,
        previous: Session?,
        reason: RefreshReason
    ) -> AttemptResult {
        let now = self.clock.now
        let problem = "the access token the token server issued failed auth.verify: \(why)"
        self.count("unverified")
        self.lastRefresh = LastRefresh(at: now, grant: self.name(of: grant), outcome: .failed(problem))
        if grant.isLogin {
            self.logger.error("login failed", metadata: ["grant": "\(self.name(of: grant))", "reason": "\(problem)"])
            self.loginFailed(why: problem, previous: previous)
            return .failed("login failed: \(problem)")
        }
        var kept = previous
        if var session = kept {
            // The answer came, so the in-flight mark goes; a refresh token it rotated is the
            // session's from now on, on disk before anything else.
            if case .issued(let issued, _) = outcome, let rotated = issued.refreshToken {
                session.refreshToken = rotated
            }
            switch session.kind {
            case .user: self.stored.user = session.stored
            case .client: self.stored.client = session.stored
            }
            self.persist()
            kept = session
        }
        // Not an outage: waiting callers do not make bearerd spend a refresh token every 3 s.
        let delay = self.step {
            $0.backOff(
                .refusal,
                why: problem,
                reason: problem,
                keep: kept,
                platformFiles: .unchanged,
                now: now,
                random: self.random
            )
        }
        self.logger.error(
            "token refresh failed: the new access token failed verification; it is not used",
            metadata: [
                "grant": "\(self.name(of: grant))", "reason": "\(why)", "failures": "\(self.machine.retry.failures)",
                "retry_in_s": "\(String(format: "%.1f", delay))",
            ]
        )
        return .failed(problem)
    }
}
