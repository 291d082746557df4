import BearerdAuth
import Foundation
import Logging
import Metrics
import Synchronization

extension TokenManager {
    /// Joins the refresh in flight, or starts one and waits for it.
    func refresh(reason: String) async {
        if case .refreshing(_, let task) = self.state {
            _ = await task.value
            return
        }
        if self.fleet != nil {
            // What to send is decided under the fleet's lock, from the row.
            _ = await self.start(nil, previous: self.currentSession, reason: reason)?.value
            return
        }
        let session = self.currentSession
        let grant: Grant
        if let refreshToken = session?.refreshToken {
            grant = .refreshToken(refreshToken)
        } else if self.source.hasClientGrant {
            grant = .clientCredentials(adding: self.scopeRequests.clientAdded)
        } else if var session, session.access != nil, self.clock.now < session.expiresAt {
            // A source that issues no refresh token (auth.json.refresh_token: none): the token
            // serves until it expires, and then a login is needed.
            session.refreshAt = session.expiresAt
            session.usableUntil = session.expiresAt
            self.transition(to: .ready(session))
            return
        } else {
            self.transition(to: .loggedOut(reason: "no refresh token: run `bearerd login`"))
            return
        }
        _ = await self.start(grant, previous: session, reason: reason)?.value
    }

    /// Enters `.refreshing` with the task that sends `grant` and returns it, unless the breaker
    /// says wait (then `nil`, and the state says why). The breaker never holds back an explicit
    /// login: a person asked for it, and it is the way out of whatever tripped the breaker.
    /// In fleet mode `grant` is `nil` for a refresh: the grant comes from the row, under the lock.
    @discardableResult
    func start(_ grant: Grant?, previous: Session?, reason: String) -> Task<ExchangeResult, Never>? {
        let now = self.clock.now
        self.attempts.removeAll { now.timeIntervalSince($0) >= 60 }
        if grant?.isLogin != true, self.attempts.count >= self.policy.maxRefreshesPerMinute,
            let oldest = self.attempts.first
        {
            let why =
                "more than \(self.policy.maxRefreshesPerMinute) refresh attempts in a minute (auth.max_refreshes_per_minute)"
            self.logger.warning("token refresh held back", metadata: ["reason": "\(why)"])
            self.lastOutcome = why
            self.transition(to: .waiting(previous, retryAt: oldest.addingTimeInterval(60), reason: why))
            // No refresh for the requests that asked for one to link to.
            self.refreshWaiters.removeAll()
            return nil
        }
        if self.fleet == nil && grant == nil { return nil }
        self.attempts.append(now)
        self.platformInputsSent = self.source.clientGrantInputs()
        self.startRefreshSpan(grant: grant.map { self.name(of: $0) } ?? "fleet", reason: reason)
        if self.fleet != nil {
            let task = Task {
                let result = await self.performShared(grant, reason: reason)
                self.endRefreshSpan(result)
                return result
            }
            self.transition(to: .refreshing(previous, task))
            return task
        }
        guard let grant else { return nil }
        if case .refreshToken = grant, let previous {
            // On disk before the refresh token leaves: see `StoredSession.refreshSentAt`. A seed
            // (auth.refresh_token_file) goes into the store here too.
            var marked = previous.stored
            marked.refreshSentAt = now
            switch previous.kind {
            case .user: self.stored.user = marked
            case .client: self.stored.client = marked
            }
            self.persist()
        }
        let task = Task {
            let result = await self.perform(grant, previous: previous, reason: reason)
            self.endRefreshSpan(result)
            return result
        }
        self.transition(to: .refreshing(previous, task))
        return task
    }

    /// The body of the one task of a refresh: ask, then apply the answer exactly once.
    private func perform(_ grant: Grant, previous: Session?, reason: String) async -> ExchangeResult {
        let sent = ContinuousClock.now
        let outcome = await Self.exchange(grant, source: self.source, transport: self.transport, clock: self.clock)
        self.refreshAnswered(after: ContinuousClock.now - sent, grant: self.name(of: grant))
        if self.verifier != nil,
            let why = await Self.verificationProblem(outcome, verifier: self.verifier, transport: self.transport)
        {
            return self.unverified(outcome, why: why, grant: grant, previous: previous, reason: reason)
        }
        return self.apply(outcome, grant: grant, previous: previous, reason: reason)
    }

    /// Talks to the token endpoint, off the actor.
    nonisolated static func exchange(
        _ grant: Grant,
        source: any TokenSource,
        transport: any TokenTransport,
        clock: any TokenClock
    ) async -> TokenOutcome {
        do {
            let request: TokenHTTPRequest
            switch grant {
            case .refreshToken(let token), .importedRefreshToken(let token):
                request = try await source.refreshRequest(token, transport: transport)
            case .clientCredentials(let added):
                request = try await source.clientCredentialsRequest(transport: transport, addingScopes: added)
            case .password(let username, let password):
                request = try await source.passwordRequest(username: username, password: password, transport: transport)
            case .authorizationCode(let code, let verifier, let redirectURI):
                request = try await source.authorizationCodeRequest(
                    code: code,
                    verifier: verifier,
                    redirectURI: redirectURI,
                    transport: transport
                )
            }
            let response = try await transport.send(request)
            switch grant {
            // `now` reads an HTTP-date Retry-After: a wall-clock time.
            case .password, .authorizationCode:
                return TokenResponseClassifier.classify(response, now: clock.wallNow, parse: source.parseLogin)
            case .clientCredentials:
                return TokenResponseClassifier.classify(response, now: clock.wallNow, parse: source.parseClientGrant)
            case .refreshToken, .importedRefreshToken:
                return TokenResponseClassifier.classify(response, now: clock.wallNow, parse: source.parseIssued)
            }
        } catch let error as TokenEngineError where error.code == .source {
            // Discovery or the source's own setup: the reason names the config key to fix. A login
            // fails on it at once; a refresh keeps the tokens and retries.
            return .unreadable(reason: "\(error)")
        } catch let error as TokenEngineError where error.code == .unreachable {
            // The issuer could not be reached: it may answer later.
            return .unreachable(reason: "\(error)")
        } catch {
            return .unreachable(reason: "cannot reach the token endpoint: \(error)")
        }
    }

    func apply(_ outcome: TokenOutcome, grant: Grant, previous: Session?, reason: String) -> ExchangeResult {
        let now = self.clock.now
        switch outcome {
        case .issued(let issued, let serverDate):
            var refreshToken = issued.refreshToken
            if refreshToken == nil {
                switch grant {
                case .refreshToken(let old), .importedRefreshToken(let old): refreshToken = old
                case .clientCredentials, .password, .authorizationCode: break
                }
            }
            let kind: Session.Kind = if case .clientCredentials = grant { .client } else { .user }
            self.install(
                issued,
                kind: kind,
                refreshToken: refreshToken,
                serverDate: serverDate,
                grant: self.name(of: grant),
                reason: reason
            )
            return .issued
        case .rejected(let status, let error):
            return self.rejected(status: status, error: error, grant: grant, previous: previous)
        case .unreadable(let why) where grant.isLogin:
            self.lastRefresh = LastRefresh(at: now, grant: self.name(of: grant), result: "failed: \(why)")
            self.lastOutcome = why
            self.logger.warning("login failed", metadata: ["grant": "\(self.name(of: grant))", "reason": "\(why)"])
            self.transition(to: previous.map { .ready($0) } ?? self.fallback(reason: "login failed: \(why)"))
            return .failed("login failed: \(why)")
        case .unreadable(let why):
            let inputs = self.platformInputsSent
            defer { if case .clientCredentials = grant { self.platformInputsFailed = inputs } }
            return self.apply(
                .unavailable(reason: why, retryAfter: nil),
                grant: grant,
                previous: previous,
                reason: reason
            )
        case .unreachable(let why):
            return self.failed(why: why, retryAfter: nil, answered: false, grant: grant, previous: previous)
        case .unavailable(let why, let retryAfter):
            return self.failed(why: why, retryAfter: retryAfter, answered: true, grant: grant, previous: previous)
        }
    }

    /// A try that got no token and rejected nothing: the tokens are kept and the try is made
    /// again after the backoff (or the server's `Retry-After`). `answered`: the server answered
    /// (a 5xx, 408, 429, a body bearerd cannot read), rather than not at all.
    private func failed(
        why: String,
        retryAfter: Duration?,
        answered: Bool,
        grant: Grant,
        previous: Session?
    ) -> ExchangeResult {
        let now = self.clock.now
        self.lastRefresh = LastRefresh(at: now, grant: self.name(of: grant), result: "failed: \(why)")
        Self.count("transient")
        self.lastOutcome = why
        if grant.isLogin {
            self.logger.warning("login failed", metadata: ["grant": "\(self.name(of: grant))", "reason": "\(why)"])
            self.transition(to: previous.map { .ready($0) } ?? self.fallback(reason: "login failed: \(why)"))
            return .failed("the token server is unavailable: \(why); try again later")
        }
        // Asking again because the platform renewed its file is for refusals and unreadable
        // files; an outage, or a server that said when to come back, is waited out.
        self.platformInputsFailed = nil
        let delay: Duration
        if self.justWoke(now), !answered {
            // No answer just after a wake: the network coming back, not an outage of the token
            // server (which was not reached, so not loaded either).
            if let last = self.attempts.indices.last { self.attempts.remove(at: last) }
            delay = .seconds(Self.wakeRetry)
        } else {
            self.consecutiveFailures += 1
            delay = retryAfter ?? self.policy.backoff(failures: self.consecutiveFailures, random: self.random())
        }
        // The server's own word on when to come back stands, even for waiting callers.
        self.serverRetryAt = retryAfter.map { now.addingTimeInterval($0.seconds) }
        self.logger.warning(
            "token refresh failed; keeping the tokens and retrying",
            metadata: [
                "grant": "\(self.name(of: grant))", "reason": "\(why)", "failures": "\(self.consecutiveFailures)",
                "retry_in_s": "\(String(format: "%.1f", delay.seconds))",
            ]
        )
        self.transition(
            to: .waiting(
                previous,
                retryAt: now.addingTimeInterval(delay.seconds),
                reason: "the token server is unavailable: \(why)"
            )
        )
        return .failed("the token server is unavailable: \(why)")
    }

    /// Takes what the server issued as the session in use, on disk before it is used.
    func install(
        _ issued: IssuedTokens,
        kind: Session.Kind,
        refreshToken: Secret?,
        serverDate: Date?,
        grant: String,
        reason: String
    ) {
        let now = self.clock.now
        let session = self.session(
            issued,
            kind: kind,
            refreshToken: refreshToken,
            receivedAt: now,
            serverDate: serverDate
        )
        self.consecutiveFailures = 0
        self.serverRetryAt = nil
        self.platformInputsFailed = nil
        self.lastOutcome = nil
        self.lastRefresh = LastRefresh(at: now, grant: grant, result: "ok")
        Self.count("ok")
        switch kind {
        case .user: self.stored.user = session.stored
        case .client: self.stored.client = session.stored
        }
        // `auth.discover` with a configured client: the issuer this session is at is kept, by
        // whatever login made it, so that a restart does not follow an API that names another.
        if self.stored.registration == nil, let pin = self.source.issuerPin { self.stored.registration = pin }
        self.persist()
        if kind == .user && reason == "login" {
            // What the API asked of the person's login (RFC 9470) is met by this one.
            self.scopeRequests.loggedIn()
            self.askAtNextLogin()
        }
        self.logger.info(
            "token refreshed",
            metadata: [
                "grant": "\(grant)", "reason": "\(reason)", "session": "\(kind.rawValue)",
                "expires_in_s": "\(Int(session.expiresAt.timeIntervalSince(now)))",
                "next_refresh_in_s": "\(Int(session.refreshAt.timeIntervalSince(now)))",
                "refresh_token_rotated": "\(issued.refreshToken != nil)",
            ]
        )
        self.transition(to: .ready(session))
    }

    /// `bearerd_token_refreshes_total{result="ok|rejected|transient"}`: every answer (or
    /// failure to get one) from the token endpoint, logins included.
    static func count(_ result: String) {
        Counter(label: "bearerd_token_refreshes_total", dimensions: [("result", result)]).increment()
    }

    /// What is left without a user session: the stored client token while it is usable, else
    /// logged out (the scheduler then asks for a client token when there is a client grant).
    func fallback(reason: String) -> State {
        if let client = self.stored.client {
            let session = Session(restoring: client, kind: .client, now: self.clock.now, policy: self.policy)
            if session.access != nil { return .ready(session) }
        }
        return .loggedOut(reason: reason)
    }

    /// Writes `stored`. On failure (disk full, read-only) the tokens stay in memory, serving
    /// requests, and the scheduler tries again.
    func persist() {
        self.storeBehind = true
        self.writeStore()
    }

    /// Writes `stored` if it is not on disk yet.
    func writeStore() {
        guard self.storeBehind else { return }
        do {
            try self.store.save(self.stored.shifted(by: self.clock.wallOffset))
            self.storeBehind = false
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
        if case .refreshing = self.state {
            switch state {
            case .refreshing: break
            default: self.lastAttemptEnded = self.clock.now
            }
        }
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
        if case .ready = state { self.platformInputsFailed = nil }
        switch state {
        case .refreshing: self.nextAttempt.withLock { $0 = self.clock.now }
        case .waiting(_, let retryAt, _): self.nextAttempt.withLock { $0 = retryAt }
        case .ready, .loggedOut: self.nextAttempt.withLock { $0 = nil }
        }
        self.changes.signal()
    }
}
