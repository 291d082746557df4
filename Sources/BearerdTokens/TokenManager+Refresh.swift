import BearerdAuth
import Foundation
import Logging
import Metrics
import Synchronization

extension TokenManager {
    /// Joins the refresh in flight, or starts one and waits for it.
    func refresh(reason: RefreshReason) async {
        if let task = self.attemptInFlight {
            _ = await task.value
            return
        }
        // Its store closed: a new refresh token could not be written, and the old one, which the
        // store keeps, would be spent.
        guard !self.storeClosed else { return }
        if self.fleet != nil {
            // What to send is decided under the fleet's lock, from the row.
            _ = await self.begin(.fromFleetRow, reason: reason)?.value
            return
        }
        let grant: Grant
        switch self.machine.choose(for: self.currentSession, now: self.clock.now) {
        case .refreshToken(let refreshToken):
            grant = .refreshToken(refreshToken)
        case .clientGrant:
            grant = .clientCredentials(adding: self.scopeRequests.clientAdded)
        case .serveUntilExpiry(let session):
            self.step { $0.settled(.ready(session), why: nil, now: self.clock.now) }
            return
        case .loggedOut(let why):
            self.step { $0.settled(.loggedOut(reason: why), why: nil, now: self.clock.now) }
            return
        }
        _ = await self.start(grant, reason: reason)?.value
    }

    /// What an attempt sends: a grant chosen here (a login, a step-up, a refresh of this host's
    /// session), or, in fleet mode, what the fleet's row holds, chosen under its lock.
    enum Sending {
        case grant(Grant)
        case fromFleetRow
    }

    /// Enters `.refreshing` with the task that sends `grant` and returns it, unless
    /// `auth.max_refreshes_per_minute` says wait (then `nil`, and the state says why). The limit
    /// never holds back an explicit login.
    @discardableResult
    func start(_ grant: Grant, reason: RefreshReason) -> Task<AttemptResult, Never>? {
        self.begin(.grant(grant), reason: reason)
    }

    private func begin(_ sending: Sending, reason: RefreshReason) -> Task<AttemptResult, Never>? {
        // Without a fleet there is no row to take a grant from; nothing starts (no `.refreshing`
        // that no task would end).
        if case .fromFleetRow = sending, self.fleet == nil { return nil }
        guard !self.storeClosed else { return nil }
        let now = self.clock.now
        let previous = self.currentSession
        let grant: Grant? = if case .grant(let grant) = sending { grant } else { nil }
        let admission = self.step {
            $0.attemptAsked(login: grant?.isLogin == true, now: now, platformInputs: self.source.clientGrantInputs())
        }
        if case .heldBack(let why) = admission {
            self.logger.warning("token refresh held back", metadata: ["reason": "\(why)"])
            // No refresh for the requests that asked for one to link to.
            self.trace.waiters.removeAll()
            return nil
        }
        self.startRefreshSpan(grant: grant.map { self.name(of: $0) } ?? "fleet", reason: reason.rawValue)
        if case .refreshToken = grant, let previous, self.fleet == nil {
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
            // In fleet mode every attempt, a login's too, goes through the fleet's lock.
            let result: AttemptResult =
                if let grant, self.fleet == nil {
                    await self.perform(grant, previous: previous, reason: reason)
                } else {
                    await self.performShared(grant, reason: reason)
                }
            self.endRefreshSpan(result)
            return result
        }
        self.inFlight = task
        return task
    }

    /// The body of the one task of a refresh: ask, then apply the answer exactly once.
    private func perform(_ grant: Grant, previous: Session?, reason: RefreshReason) async -> AttemptResult {
        let sent = ContinuousClock.now
        let outcome = await Self.askTokenEndpoint(
            grant,
            source: self.source,
            transport: self.transport,
            clock: self.clock
        )
        self.refreshAnswered(after: ContinuousClock.now - sent, grant: self.name(of: grant))
        if self.verifier != nil,
            let why = await Self.verificationProblem(outcome, verifier: self.verifier, transport: self.transport)
        {
            return self.unverified(outcome, why: why, grant: grant, previous: previous, reason: reason)
        }
        return self.apply(outcome, grant: grant, previous: previous, reason: reason)
    }

    /// Talks to the token endpoint, off the actor.
    nonisolated static func askTokenEndpoint(
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

    func apply(_ outcome: TokenOutcome, grant: Grant, previous: Session?, reason: RefreshReason) -> AttemptResult {
        // A suspend or a step during the attempt is noticed before its end is judged: a failure
        // just after a wake is the network coming back, and a step applies to the old session,
        // not to the one this answer brings.
        self.noticeClockJumps()
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
        case .rejected(let status, let error, let description):
            return self.rejected(
                status: status,
                error: error,
                description: description,
                grant: grant,
                previous: previous
            )
        case .unreadable(let why) where grant.isLogin:
            self.lastRefresh = LastRefresh(at: now, grant: self.name(of: grant), outcome: .failed(why))
            self.logger.warning("login failed", metadata: ["grant": "\(self.name(of: grant))", "reason": "\(why)"])
            self.loginFailed(why: why, previous: previous)
            return .failed("login failed: \(why)")
        case .unreadable(let why):
            // The client grant's own files (a subject token, an assertion) cannot be read: a
            // renewed file is tried at once.
            let stale: RefreshStateMachine.PlatformFiles =
                if case .clientCredentials = grant { .stale } else { .notAtFault }
            return self.failed(
                why: why,
                retryAfter: nil,
                answered: true,
                platformFiles: stale,
                grant: grant,
                previous: previous
            )
        case .unreachable(let why):
            return self.failed(why: why, retryAfter: nil, answered: false, grant: grant, previous: previous)
        case .unavailable(let why, let retryAfter):
            return self.failed(why: why, retryAfter: retryAfter, answered: true, grant: grant, previous: previous)
        }
    }

    /// A login that got no token: the session in hand stays, else what is left without one.
    func loginFailed(why: String, previous: Session?) {
        let state = previous.map { .ready($0) } ?? self.fallback(reason: "login failed: \(why)")
        self.step { $0.settled(state, why: why, now: self.clock.now) }
    }

    /// A try that got no token and rejected nothing: the tokens are kept and the try is made
    /// again after the backoff (or the server's `Retry-After`). `answered`: the server answered
    /// (a 5xx, 408, 429, a body bearerd cannot read), rather than not at all.
    private func failed(
        why: String,
        retryAfter: Duration?,
        answered: Bool,
        platformFiles: RefreshStateMachine.PlatformFiles = .notAtFault,
        grant: Grant,
        previous: Session?
    ) -> AttemptResult {
        let now = self.clock.now
        self.lastRefresh = LastRefresh(at: now, grant: self.name(of: grant), outcome: .failed(why))
        self.count("transient")
        if grant.isLogin {
            self.logger.warning("login failed", metadata: ["grant": "\(self.name(of: grant))", "reason": "\(why)"])
            self.loginFailed(why: why, previous: previous)
            return .failed("the token server is unavailable: \(why); try again later")
        }
        let delay = self.step {
            $0.backOff(
                .outage(answered: answered, retryAfter: retryAfter),
                why: why,
                reason: "the token server is unavailable: \(why)",
                keep: previous,
                platformFiles: platformFiles,
                now: now,
                random: self.random
            )
        }
        self.logger.warning(
            "token refresh failed; keeping the tokens and retrying",
            metadata: [
                "grant": "\(self.name(of: grant))", "reason": "\(why)", "failures": "\(self.machine.retry.failures)",
                "retry_in_s": "\(String(format: "%.1f", delay))",
            ]
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
        reason: RefreshReason
    ) {
        let now = self.clock.now
        let session = self.session(
            issued,
            kind: kind,
            refreshToken: refreshToken,
            receivedAt: now,
            serverDate: serverDate
        )
        self.lastRefresh = LastRefresh(at: now, grant: grant, outcome: .ok)
        self.count("ok")
        switch kind {
        case .user: self.stored.user = session.stored
        case .client: self.stored.client = session.stored
        }
        // `auth.discover` with a configured client: the issuer this session is at is kept, by
        // whatever login made it, so that a restart does not follow an API that names another.
        if self.stored.registration == nil, let pin = self.source.issuerPin { self.stored.registration = pin }
        self.persist()
        if kind == .user && reason == .login {
            // What the API asked of the person's login (RFC 9470) is met by this one.
            self.scopeRequests.loggedIn()
            self.askAtNextLogin()
        }
        self.logger.info(
            "token refreshed",
            metadata: [
                "grant": "\(grant)", "reason": "\(reason.rawValue)", "session_kind": "\(kind.rawValue)",
                "expires_in_s": "\(Int(session.expiresAt.timeIntervalSince(now)))",
                "next_refresh_in_s": "\(Int(session.refreshAt.timeIntervalSince(now)))",
                "refresh_token_rotated": "\(issued.refreshToken != nil)",
            ]
        )
        self.step { $0.issued(session, now: now) }
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
        guard !self.storeClosed else {
            self.logger.error(
                "this session has stopped and its store is closed: the change of its tokens is not written",
                metadata: ["hint": "run the verb again once the session runs"]
            )
            return
        }
        do {
            try self.store.save(self.stored.shifted(by: self.clock.wallOffset))
            self.storeBehind = false
        } catch {
            self.logger.error(
                "cannot save the tokens; they stay in memory and bearerd retries the write",
                metadata: ["error": "\(error)", "retry_in_s": "\(Int(RefreshStateMachine.saveRetryInterval))"]
            )
        }
    }

    /// The session stopped: once a refresh in flight is stored and a write that failed is tried
    /// once more, the store is let go (a file store's lock with it, so that another session or
    /// daemon may open it); nothing is written after.
    package func closeStore() async {
        guard !self.storeClosed else { return }
        await self.awaitInFlight()
        self.writeStore()
        self.storeClosed = true
        self.store.close()
    }
}
