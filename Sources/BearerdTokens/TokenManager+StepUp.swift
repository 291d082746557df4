import BearerdAuth
import Foundation
import Logging

extension TokenManager {
    /// The API answered 403 asking for more than `token` has (RFC 6750 §3.1, RFC 9470) to a
    /// request for `path`. It is noted for `status` and the next login. For a client token under
    /// `auth.scope_step_up`, the client grant is asked at once for the allowed scopes missing
    /// (one exchange at a time, within the rate limits), and the new token is returned when the
    /// server granted them; a refusal keeps the token in hand and pauses that scope.
    package func upstreamAskedForMore(
        _ challenge: ScopeChallenge,
        token: BearerToken,
        path: String
    ) async
        -> BearerToken?
    {
        let session = self.currentSession
        let granted = Set((session?.scope ?? "").split(separator: " ").map(String.init))
        let decision = self.scopeRequests.stepUp(
            challenge,
            granted: granted,
            allowed: self.policy.scopeStepUpAllowed,
            now: self.clock.now
        )
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
        self.scopeRequests.note(challenge, path: path, at: self.clock.wallNow, action: action)
        self.askAtNextLogin()
        self.logger.notice(
            "the API asks for more than the token has",
            metadata: [
                "error": "\(challenge.kind.rawValue)", "scope": "\(challenge.scopes.joined(separator: " "))",
                "path_prefix": "\(ScopeRequests.firstSegment(path))", "action": "\(action)",
            ]
        )
        guard session?.kind == .client, self.policy.scopeStepUp, self.fleet == nil,
            case .success(let missing) = decision
        else { return nil }
        // The token changed since: the new one may have it already.
        if let current = session?.access, current != token { return current }
        while case .refreshing(_, let task) = self.state { _ = await task.value }
        self.scopeRequests.added(missing)
        self.noteWaiter()
        let added = self.scopeRequests.clientAdded
        guard
            let task = self.start(
                .clientCredentials(adding: added),
                previous: self.currentSession,
                reason: "scope_step_up"
            )
        else { return nil }
        if case .failed(let why) = await task.value {
            self.scopeRequests.refused(missing, now: self.clock.now)
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
            let now = Set(scope.split(separator: " ").map(String.init))
            let withheld = missing.filter { !now.contains($0) }
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

    /// Tells the source what the next login asks for: what the API asked for, and the scopes
    /// the person's session has, so that a login never drops a granted scope.
    func askAtNextLogin() {
        let granted = self.stored.user?.scope.map { $0.split(separator: " ").map(String.init) } ?? []
        let asked = self.scopeRequests.asked
        self.source.askAtLogin(
            scopes: asked.isEmpty ? [] : ScopeRequests.union(granted, asked),
            acrValues: self.scopeRequests.acrValues,
            maxAge: self.scopeRequests.maxAge
        )
    }
}
