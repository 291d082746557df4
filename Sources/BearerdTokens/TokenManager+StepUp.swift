import BearerdAuth
import Foundation
import Logging

extension TokenManager {
    /// The API answered 403 asking for more than `token` has (RFC 6750 §3.1, RFC 9470) to a
    /// request for `path`. It is noted for `status` and the next login. For a client token under
    /// `auth.scope_step_up`, the client grant is asked at once for the allowed scopes missing
    /// (one attempt at a time, within the rate limits), and the new token is returned when the
    /// server granted them; a refusal keeps the token in hand and pauses that scope.
    package func upstreamAskedForMore(
        _ challenge: ScopeChallenge,
        token: BearerToken,
        path: String
    ) async
        -> BearerToken?
    {
        let session = self.currentSession
        let decision = self.stepUpDecision(challenge, session: session)
        let action: String
        switch (session?.kind, decision) {
        case (.user?, _) where challenge.kind == .insufficientScope && challenge.scopes.isEmpty,
            (nil, _) where challenge.kind == .insufficientScope && challenge.scopes.isEmpty:
            action = "passed on: it does not say which scope (no scope= in its WWW-Authenticate); add it to auth.scopes"
        case (.user?, _), (nil, _):
            action = "`bearerd login` asks for it"
        case (.client?, _) where !self.policy.scopeStepUp:
            action = "passed on: set auth.scope_step_up (and auth.scope_step_up_allow) for bearerd to ask for it"
        case (.client?, _) where self.fleet != nil:
            action = "passed on: a fleet's shared client token is not stepped up"
        case (.client?, .failure(let refusal)):
            action = "passed on: \(refusal.reason)"
        case (.client?, .success):
            action = "asking the token server for it"
        }
        let news = self.scopeRequests.note(challenge, path: path, at: self.clock.wallNow, action: action)
        self.askAtNextLogin()
        // Once per new ask: an API that answers every request so must not flood the log.
        self.logger.log(
            level: news ? .notice : .debug,
            "the API asks for more than the token has",
            metadata: [
                "error": "\(challenge.kind.rawValue)", "scope": "\(challenge.scopes.joined(separator: " "))",
                "path_prefix": "\(PathPrefix.of(path))", "action": "\(action)",
            ]
        )
        guard session?.kind == .client, self.policy.scopeStepUp, self.fleet == nil, case .success = decision else {
            return nil
        }
        // One step-up at a time: after the one in flight, the token in hand may have it already.
        await self.awaitInFlight()
        let now = self.currentSession
        guard case .success(let missing) = self.stepUpDecision(challenge, session: now) else {
            if let current = now?.access, current != token,
                case .failure(.alreadyGranted) = self.stepUpDecision(challenge, session: now)
            {
                return current
            }
            return nil
        }
        self.scopeRequests.added(missing)
        self.noteWaiter()
        let added = self.scopeRequests.clientAdded
        guard
            let task = self.start(.clientCredentials(adding: added), reason: .scopeStepUp)
        else { return nil }
        if case .failed(let why) = await task.value {
            if case .rejected = self.lastRefresh?.outcome {
                // Refused: the scope waits. (An outage is not a refusal: the next try asks again.)
                self.scopeRequests.refused(missing, now: self.clock.now)
            }
            self.scopeRequests.setAction("passed on: \(why)")
            return nil
        }
        guard case .ready(let fresh) = self.state, let access = fresh.access, access != token else {
            self.scopeRequests.refused(missing, now: self.clock.now)
            self.scopeRequests.setAction("passed on: the token server did not issue a token with it")
            return nil
        }
        // A server that names the scope granted (RFC 6749 §5.1) must have granted these.
        if let scope = fresh.scope {
            let has = Set(scope.split(separator: " ").map(String.init))
            let withheld = missing.filter { !has.contains($0) }
            guard withheld.isEmpty else {
                self.scopeRequests.refused(withheld, now: self.clock.now)
                self.scopeRequests.setAction(
                    "passed on: the token server did not grant \(withheld.joined(separator: " "))"
                )
                return nil
            }
        }
        self.scopeRequests.setAction("granted: the client token has it; the request was sent again")
        return access
    }

    /// What a step-up would ask for with `session` in hand. A token whose answer named no scope
    /// is taken to have what was asked for (RFC 6749 §5.1: the scope asked, when it is not
    /// said), so that such a server is not asked again at every 403.
    func stepUpDecision(_ challenge: ScopeChallenge, session: Session?) -> Result<[String], StepUpRefusal> {
        let granted: Set<String> =
            if let scope = session?.scope {
                Set(scope.split(separator: " ").map(String.init))
            } else {
                Set(self.source.configuredScopes + self.scopeRequests.clientAdded)
            }
        return self.scopeRequests.stepUp(
            challenge,
            granted: granted,
            allowed: self.policy.scopeStepUpAllowed,
            now: self.clock.now
        )
    }

    /// Tells the source what the next login asks for: what the API asked for, and the scopes
    /// the person's session has, so that a login never drops a granted scope.
    func askAtNextLogin() {
        let granted = self.stored.user?.scope.map { $0.split(separator: " ").map(String.init) } ?? []
        self.source.askAtLogin(
            granted: granted,
            asked: self.scopeRequests.asked,
            acrValues: self.scopeRequests.acrValues,
            maxAge: self.scopeRequests.maxAge
        )
    }
}
