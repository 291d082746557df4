import BearerdAuth
import Foundation
import Logging
import Synchronization

extension TokenManager {
    /// Joins the refresh in flight, or starts one and waits for it.
    func refresh(reason: String) async {
        if case .refreshing(_, let task) = self.state {
            await task.value
            return
        }
        let session = self.currentSession
        let grant: Grant
        if let refreshToken = session?.refreshToken {
            grant = .refreshToken(refreshToken)
        } else if self.source.hasClientGrant {
            grant = .clientCredentials
        } else {
            self.transition(to: .loggedOut(reason: "no refresh token: run `bearerd login`"))
            return
        }
        self.start(grant, previous: session, reason: reason)
        if case .refreshing(_, let task) = self.state { await task.value }
    }

    /// Enters `.refreshing` with the task that sends `grant`, unless the breaker says wait.
    func start(_ grant: Grant, previous: Session?, reason: String) {
        let now = self.clock.now
        self.attempts.removeAll { now.timeIntervalSince($0) >= 60 }
        if self.attempts.count >= self.policy.maxRefreshesPerMinute, let oldest = self.attempts.first {
            let why =
                "more than \(self.policy.maxRefreshesPerMinute) refresh attempts in a minute (auth.max_refreshes_per_minute)"
            self.logger.warning("token refresh held back", metadata: ["reason": "\(why)"])
            self.transition(to: .waiting(previous, retryAt: oldest.addingTimeInterval(60), reason: why))
            return
        }
        self.attempts.append(now)
        let task = Task { await self.perform(grant, previous: previous, reason: reason) }
        self.transition(to: .refreshing(previous, task))
    }

    /// The body of the one task of a refresh: ask, then apply the answer exactly once.
    private func perform(_ grant: Grant, previous: Session?, reason: String) async {
        let outcome = await Self.exchange(grant, source: self.source, transport: self.transport, clock: self.clock)
        self.apply(outcome, grant: grant, previous: previous, reason: reason)
    }

    /// Talks to the token endpoint, off the actor.
    private nonisolated static func exchange(
        _ grant: Grant,
        source: any TokenSource,
        transport: any TokenTransport,
        clock: any TokenClock
    ) async -> TokenOutcome {
        do {
            let request: TokenHTTPRequest
            switch grant {
            case .refreshToken(let token): request = try await source.refreshRequest(token, transport: transport)
            case .clientCredentials: request = try await source.clientCredentialsRequest(transport: transport)
            case .password(let username, let password):
                request = try await source.passwordRequest(username: username, password: password, transport: transport)
            }
            let response = try await transport.send(request)
            return TokenResponseClassifier.classify(response, now: clock.now, parse: source.parseIssued)
        } catch {
            return .unavailable(reason: "cannot reach the token endpoint: \(error)", retryAfter: nil)
        }
    }

    private func apply(_ outcome: TokenOutcome, grant: Grant, previous: Session?, reason: String) {
        let now = self.clock.now
        switch outcome {
        case .issued(let issued, let serverDate):
            let kind: Session.Kind = if case .clientCredentials = grant { .client } else { .user }
            let rotated = issued.refreshToken != nil
            var refreshToken = issued.refreshToken
            if refreshToken == nil, case .refreshToken(let old) = grant { refreshToken = old }
            let session = self.session(
                issued,
                kind: kind,
                refreshToken: refreshToken,
                receivedAt: now,
                serverDate: serverDate
            )
            self.consecutiveFailures = 0
            self.lastOutcome = nil
            if kind == .user { self.save(session) }
            self.logger.info(
                "token refreshed",
                metadata: [
                    "grant": "\(grant.name)", "reason": "\(reason)",
                    "expires_in_s": "\(Int(session.expiresAt.timeIntervalSince(now)))",
                    "next_refresh_in_s": "\(Int(session.refreshAt.timeIntervalSince(now)))",
                    "refresh_token_rotated": "\(rotated)",
                ]
            )
            self.transition(to: .ready(session))
        case .rejected(let status, let error):
            self.rejected(status: status, error: error, grant: grant, previous: previous)
        case .unavailable(let why, let retryAfter):
            self.consecutiveFailures += 1
            let delay = retryAfter ?? self.policy.backoff(failures: self.consecutiveFailures, random: self.random())
            let retryAt = now.addingTimeInterval(delay.seconds)
            self.lastOutcome = why
            self.logger.warning(
                "token refresh failed; keeping the tokens and retrying",
                metadata: [
                    "grant": "\(grant.name)", "reason": "\(why)", "failures": "\(self.consecutiveFailures)",
                    "retry_in_s": "\(String(format: "%.1f", delay.seconds))",
                ]
            )
            if case .password = grant {
                self.transition(to: previous.map { .ready($0) } ?? .loggedOut(reason: "login failed: \(why)"))
            } else {
                self.transition(
                    to: .waiting(previous, retryAt: retryAt, reason: "the token server is unavailable: \(why)")
                )
            }
        }
    }

    /// A 4xx: the credentials are no good. The only path that wipes stored tokens.
    private func rejected(status: Int, error: String?, grant: Grant, previous: Session?) {
        let code = error ?? "HTTP \(status)"
        switch grant {
        case .refreshToken:
            self.logger.error(
                "the token server rejected the refresh token; the stored tokens are wiped: run `bearerd login`",
                metadata: ["status": "\(status)", "error": "\(code)"]
            )
            self.unsaved = nil
            do {
                try self.store.wipe()
            } catch {
                self.logger.error("cannot wipe the token store", metadata: ["error": "\(error)"])
            }
            self.snapshot.withLock { $0 = nil }
            self.lastOutcome = "the token server rejected the refresh token (\(code))"
            self.transition(
                to: .loggedOut(reason: "the token server rejected the session (\(code)): run `bearerd login`")
            )
        case .password:
            self.lastOutcome = "the token server refused the login (\(code)): check the user name and password"
            self.transition(to: previous.map { .ready($0) } ?? .loggedOut(reason: self.lastOutcome!))
        case .clientCredentials:
            // Nothing stored to wipe; back off so a disabled client is not hammered.
            self.consecutiveFailures += 1
            let delay = self.policy.backoff(failures: self.consecutiveFailures, random: self.random())
            let why =
                "the token server rejected the client credentials (\(code)): check auth.client_id and the client secret"
            self.logger.error("client token refused", metadata: ["status": "\(status)", "error": "\(code)"])
            self.lastOutcome = why
            self.transition(to: .waiting(nil, retryAt: self.clock.now.addingTimeInterval(delay.seconds), reason: why))
        }
    }

    /// A session from what the server issued: expiry is the earliest of JWT `exp` (corrected
    /// for the server's clock skew), `expires_in` and an absolute `expiresAt`; with none of
    /// them, `auth.default_lifetime`.
    private func session(
        _ issued: IssuedTokens,
        kind: Session.Kind,
        refreshToken: Secret?,
        receivedAt: Date,
        serverDate: Date?
    ) -> Session {
        var skew: TimeInterval = 0
        if let serverDate {
            let offset = serverDate.timeIntervalSince(receivedAt)
            if abs(offset) > self.policy.skewTolerance.seconds {
                skew = offset
                if !self.skewWarned {
                    self.skewWarned = true
                    self.logger.warning(
                        "the token server's clock differs from this machine's; correcting token expiry for it",
                        metadata: ["offset_s": "\(Int(offset))"]
                    )
                }
            }
        }
        var candidates: [Date] = []
        if let exp = JWTClaims.expiry(of: issued.accessToken.value) {
            candidates.append(Date(timeIntervalSince1970: exp - skew))
        }
        if let lifetime = issued.lifetime { candidates.append(receivedAt.addingTimeInterval(lifetime.seconds)) }
        if let expiresAt = issued.expiresAt { candidates.append(expiresAt.addingTimeInterval(-skew)) }
        let expiresAt = candidates.min() ?? receivedAt.addingTimeInterval(self.policy.defaultLifetime.seconds)
        return Session(
            kind: kind,
            access: issued.accessToken,
            expiresAt: expiresAt,
            usableUntil: self.policy.usableUntil(receivedAt: receivedAt, expiresAt: expiresAt),
            refreshAt: self.policy.refreshTime(receivedAt: receivedAt, expiresAt: expiresAt, random: self.random()),
            refreshToken: refreshToken
        )
    }

    private func save(_ session: Session) {
        self.unsaved = StoredTokens(
            refreshToken: session.refreshToken,
            accessToken: session.access,
            accessExpiresAt: session.expiresAt
        )
        self.saveUnsaved()
    }

    /// Writes tokens that are not on disk yet. On failure (disk full, read-only) they stay in
    /// memory, serving requests, and the scheduler tries again.
    func saveUnsaved() {
        guard let tokens = self.unsaved else { return }
        do {
            try self.store.save(tokens)
            self.unsaved = nil
        } catch {
            self.logger.error(
                "cannot save the tokens; they stay in memory and bearerd retries the write",
                metadata: ["error": "\(error)", "retry_in_s": "\(Int(Self.saveRetryInterval))"]
            )
        }
    }

    /// Every state change goes through here: the snapshot the data path reads, and a nudge to
    /// the scheduler.
    func transition(to state: State) {
        self.state = state
        switch state {
        case .ready(let session), .refreshing(let session?, _):
            if let access = session.access {
                self.snapshot.withLock { $0 = (access, session.usableUntil) }
            } else {
                self.snapshot.withLock { $0 = nil }
            }
        case .waiting(let session?, _, _):
            // The token server fails: use the token until it really expires, leeway or not.
            if let access = session.access {
                self.snapshot.withLock { $0 = (access, session.expiresAt) }
            } else {
                self.snapshot.withLock { $0 = nil }
            }
        case .loggedOut, .refreshing(nil, _), .waiting(nil, _, _):
            self.snapshot.withLock { $0 = nil }
        }
        self.generation += 1
        let waiters = self.changeWaiters
        self.changeWaiters.removeAll()
        for waiter in waiters.values { waiter.resume() }
    }
}
