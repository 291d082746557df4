import BearerdAuth
import Foundation
import Logging
import Synchronization
import Tracing

/// Keeps a valid token ready, refreshes it through one critical section, and never logs a user
/// out because of a network blip.
///
/// Every refresh — proactive (``TokenRefreshService``), on demand (a request found the token
/// expired) or forced (the upstream answered 401) — is the `.refreshing` state, which holds the
/// one task that talks to the token endpoint; every caller that needs a token meanwhile awaits
/// that task. So a refresh token is sent once, whatever the number of callers.
package actor TokenManager: TokenProvider {
    /// How one exchange with the token endpoint ended, for the caller that asked for it.
    enum ExchangeResult: Sendable {
        case issued
        case failed(String)
    }

    enum State {
        /// No user session and no usable client grant.
        case loggedOut(reason: String)
        case ready(Session)
        /// The one refresh in flight; callers await the task, then look at the state again.
        case refreshing(Session?, Task<ExchangeResult, Never>)
        /// The last attempt failed without rejecting the tokens: retry at `retryAt`.
        case waiting(Session?, retryAt: Date, reason: String)
    }

    enum Grant {
        case refreshToken(Secret)
        /// The client's own token; `adding`: scopes beyond `auth.scopes` the API asked for
        /// (`auth.scope_step_up`).
        case clientCredentials(adding: [String])
        case password(username: String, password: Secret)
        /// `bearerd login --refresh-token-stdin`: sent like a refresh, judged like a login (a
        /// refusal keeps the session in hand).
        case importedRefreshToken(Secret)
        /// `bearerd login` in a browser: the code the redirect brought, with its PKCE verifier.
        case authorizationCode(code: Secret, verifier: Secret, redirectURI: String)

        var name: String {
            switch self {
            case .refreshToken: "refresh_token"
            case .clientCredentials: "client_credentials"
            case .password: "password"
            case .importedRefreshToken: "imported_refresh_token"
            case .authorizationCode: "authorization_code"
            }
        }

        var isLogin: Bool {
            switch self {
            case .password, .importedRefreshToken, .authorizationCode: true
            case .refreshToken, .clientCredentials: false
            }
        }
    }

    /// The last exchange with the token endpoint, for `bearerd status`.
    struct LastRefresh: Sendable {
        var at: Date
        var grant: String
        var result: String
    }

    let source: any TokenSource
    let transport: any TokenTransport
    let store: any TokenStore
    var policy: RefreshPolicy
    let logger: Logger
    let random: @Sendable () -> Double
    /// Deadlines are planned on `clock.now`, which a wall-clock step does not move
    /// (``SteadyTokenClock``); wall-clock facts cross over through `clock.wallOffset`.
    nonisolated let clock: any TokenClock
    /// The machine's clocks, watched for a suspend or a step (``ClockWatch``).
    nonisolated let clocks: any ClockSource
    var clockWatch = ClockWatch()
    /// When the machine last woke from a suspend.
    var wokeAt: Date?
    /// The token requests may use without a hop to the actor, and until when.
    nonisolated let snapshot = Mutex<(token: BearerToken, usableUntil: Date)?>(nil)
    /// When the next attempt at a token happens: now while one is in flight, `retryAt` while
    /// waiting; `nil` otherwise. Read without the actor by requests that stop waiting.
    nonisolated let nextAttempt = Mutex<Date?>(nil)

    var state: State
    var consecutiveFailures = 0
    var attempts: [Date] = []
    /// Until when the token server asked to be left alone (its `Retry-After` on the last failure).
    var serverRetryAt: Date?
    /// When the last attempt at a token ended: the probe interval counts from there.
    var lastAttemptEnded: Date?
    /// Which paths' 401s may force a refresh (a path that refuses fresh tokens too pauses its own).
    var forcedRefresh = ForcedRefreshGuard()
    /// Browser logins begun (`bearerd login`), waiting for their code.
    var authorizations = PendingAuthorizations()
    /// What the API asked for beyond the token (403 `insufficient_scope`).
    var scopeRequests = ScopeRequests()
    var skewWarned = false
    var lastOutcome: String?
    var lastRefresh: LastRefresh?
    nonisolated let changes = ChangeSignal()
    /// What the store should hold: the user's session and the client token, apart.
    var stored: StoredTokens
    /// Whether `stored` is not on disk yet (a write failed); written again every
    /// `saveRetryInterval`.
    var storeBehind = false
    static let saveRetryInterval: TimeInterval = 5
    /// `auth.refresh_token_file`: in fleet mode, used when the fleet's row was never written.
    let seed: Secret?
    /// The fleet's shared row (`store.backend: postgres`); `nil` for a store of this host's own.
    let fleet: (any SharedSessionStore)?
    /// This host's name, as the fleet's row records who wrote it.
    let fleetHost: String?
    /// The row version the session in hand came from.
    var fleetVersion: Int64?
    var fleetWrittenBy: String?
    /// Whether tokens issued here are not in the fleet's row yet (a write failed).
    var fleetBehind = false
    /// Why the fleet's store cannot be used right now, for `status`.
    var fleetProblem: String?
    /// The token of the 401 that asked for the refresh: a host that finds it replaced in the
    /// fleet's row adopts the replacement instead of refreshing again.
    var rejectedByUpstream: BearerToken?
    /// The platform's files the client grant sends (a subject token, a client assertion), as
    /// they were when the last attempt started, and when the last client grant failed: while they
    /// stay as they were at the failure, retrying will not help; once the platform renews them the
    /// grant is tried again at once (the scheduler looks every ``platformPollInterval``).
    var platformInputsSent: Int?
    var platformInputsFailed: Int?
    static let platformPollInterval: TimeInterval = 2
    /// `tracing.endpoint`: refresh spans; `nil` when tracing is off.
    let tracer: (any Tracer)?
    var refreshSpan: (any Span)?
    var refreshSpanStarted: ContinuousClock.Instant?
    var refreshSpanAnswered = false
    /// The requests (their span contexts) waiting for the refresh in flight.
    var refreshWaiters: [ServiceContext] = []
    /// `auth.verify`: checks every access token before it is used.
    let verifier: (any TokenVerifier)?
    /// `auth.dpop`: the key the tokens are bound to, kept in `stored` with them.
    let proofKey: (any ProofKey)?

    /// Starts from the store: the user's session, else `seed` (`auth.refresh_token_file`) when
    /// there is no store yet, else the client token (with a client grant).
    package init(
        source: any TokenSource,
        transport: any TokenTransport,
        store: any TokenStore,
        seed: Secret? = nil,
        policy: RefreshPolicy = RefreshPolicy(),
        clock: any TokenClock = SteadyTokenClock(),
        clocks: any ClockSource = SystemClockSource(),
        logger: Logger,
        fleet: (any SharedSessionStore)? = nil,
        host: String? = nil,
        verifier: (any TokenVerifier)? = nil,
        proofKey: (any ProofKey)? = nil,
        tracer: (any Tracer)? = nil,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.tracer = tracer
        self.source = source
        self.verifier = verifier
        self.proofKey = proofKey
        self.seed = seed
        self.fleet = fleet
        self.fleetHost = host
        self.transport = transport
        self.store = store
        self.policy = policy
        self.clock = clock
        self.clocks = clocks
        self.logger = logger
        self.random = random
        var loaded: StoredTokens?
        do {
            // The store keeps wall-clock times; the engine plans on its own clock.
            loaded = try store.load()?.shifted(by: -clock.wallOffset)
        } catch {
            logger.error("cannot read the token store; starting without it", metadata: ["error": "\(error)"])
        }
        var stored = loaded ?? StoredTokens()
        if stored.user?.isEmpty == true { stored.user = nil }
        if stored.client?.isEmpty == true || !source.hasClientGrant { stored.client = nil }
        if let proofKey {
            // A new key reaches the store with the first write: the refresh-in-flight mark or
            // the answer that brings the first tokens bound to it.
            stored.dpopKey = Self.proofKey(proofKey, from: stored, logger: logger)
        }
        if stored.registration != nil, !source.adopt(stored.registration) {
            // Registered for another API or client (the config changed): login registers anew.
            stored.registration = nil
        }
        self.stored = stored
        let now = clock.now
        if let sent = (stored.user ?? stored.client)?.refreshSentAt {
            logger.notice(
                "bearerd stopped while a refresh was in flight; refreshing again at once, within the token server's grace period for the previous refresh token",
                metadata: ["sent_s_ago": "\(Int(now.timeIntervalSince(RefreshPolicy.plausible(sent, around: now))))"]
            )
        }
        if fleet != nil {
            // Read under the fleet's lock by the first refresh, which the scheduler runs at once.
            self.state = .waiting(nil, retryAt: now, reason: "the fleet's session has not been read from its store yet")
        } else if let user = stored.user {
            self.state = .ready(Session(restoring: user, kind: .user, now: now, policy: policy))
        } else if loaded == nil, let seed {
            // Only an empty store is seeded: after a logout or a rejection the seed is spent.
            self.state = .ready(
                Session(kind: .user, access: nil, expiresAt: now, usableUntil: now, refreshAt: now, refreshToken: seed)
            )
        } else if let client = stored.client {
            self.state = .ready(Session(restoring: client, kind: .client, now: now, policy: policy))
        } else {
            self.state = .loggedOut(reason: "no token: run `bearerd login`")
        }
        if case .ready(let session) = self.state, let access = session.access {
            self.snapshot.withLock { $0 = (access, session.usableUntil) }
        }
        _ = self.clockWatch.observe(clocks.read())
    }

    /// The DPoP key to keep: the one `stored` holds, else the holder's own (new) key.
    static func proofKey(_ holder: any ProofKey, from stored: StoredTokens, logger: Logger) -> Secret {
        if let key = stored.dpopKey {
            if holder.adopt(key) { return key }
            logger.error(
                "the stored DPoP key cannot be read; a new key is used, and tokens bound to the old one fail until the next login or refresh"
            )
        }
        return holder.exported()
    }

    /// New timing rules (a reload): they apply from the next token the server issues.
    package func update(policy: RefreshPolicy) {
        self.policy = policy
    }

    // MARK: TokenProvider

    package nonisolated func currentToken() -> BearerToken? {
        guard let (token, usableUntil) = self.snapshot.withLock({ $0 }) else { return nil }
        return self.clock.now < usableUntil ? token : nil
    }

    package nonisolated func secondsUntilNextAttempt() -> Int? {
        guard let next = self.nextAttempt.withLock({ $0 }) else { return nil }
        let wait = next.timeIntervalSince(self.clock.now)
        return wait.isFinite ? max(1, Int(min(wait, RefreshPolicy.longestLifetime).rounded(.up))) : nil
    }

    /// A token for a request, waiting for the refresh it needs. How long a request waits is the
    /// caller's to bound (`proxy.token_wait`); every round here waits for a refresh or a retry
    /// time, so the number of attempts inside one wait does not end it early. The one loop that
    /// waits for nothing, a server that issues tokens already expired, ends after
    /// ``expiredIssuesPerRequest`` answers with a 503 that says when to come back.
    package func token() async throws -> BearerToken {
        self.noticeClockJumps()
        var expiredIssues = 0
        while true {
            let now = self.clock.now
            switch self.state {
            case .ready(let session):
                if let access = session.access, now < session.usableUntil { return access }
                guard expiredIssues < Self.expiredIssuesPerRequest else {
                    let why = self.lastOutcome ?? "the token server issues tokens that are already expired"
                    throw Self.unavailable(
                        "no valid token after \(expiredIssues) refreshes: \(why)",
                        retryAt: self.nextAttempt.withLock { $0 } ?? now,
                        now: now
                    )
                }
                self.noteWaiter()
                await self.refresh(reason: "expired")
                if self.readyButUnusable { expiredIssues += 1 }
            case .refreshing(_, let task):
                self.noteWaiter()
                _ = await task.value
            case .waiting(let session, let retryAt, let reason):
                // While the token server fails, the token is used until it really expires.
                if let session, let access = session.access, now < session.expiresAt { return access }
                if self.justWoke(now), self.serverRetryAt.map({ $0 <= now }) ?? true,
                    retryAt.timeIntervalSince(now) <= Self.wakeRetry
                {
                    // The network is coming back after a wake: wait for the next try (the
                    // request's proxy.token_wait bounds the wait) rather than answer 503. Bounded:
                    // the window is ``wakeGrace`` long and each wait reaches a later try.
                    if retryAt > now {
                        try await self.clock.sleep(until: retryAt)
                    } else {
                        await self.refresh(reason: "retry")
                    }
                    continue
                }
                let probeAt = self.probe(session, retryAt: retryAt, reason: reason, now: now)
                guard now >= probeAt else { throw Self.unavailable(reason, retryAt: probeAt, now: now) }
                self.noteWaiter()
                await self.refresh(reason: "retry")
            case .loggedOut(let reason):
                guard self.source.hasClientGrant else { throw TokenUnavailableError.notLoggedIn(reason) }
                await self.refresh(reason: "client_token")
                if self.readyButUnusable { expiredIssues += 1 }
            }
        }
    }

    /// How many answers with a token already unusable one request takes before its 503.
    static let expiredIssuesPerRequest = 3

    /// Whether the session in hand is ready with no token a request may use.
    private var readyButUnusable: Bool {
        guard case .ready(let session) = self.state else { return false }
        return session.access == nil || self.clock.now >= session.usableUntil
    }

    /// The upstream answered 401 to a request sent with `token`. Refreshes once if `token` is
    /// still the current one; if another request already replaced it, does not refresh again.
    /// A token younger than ``RefreshPolicy/forcedRefreshFloor`` (or a quarter of its lifetime,
    /// if that is less) is not refreshed: the 401 is
    /// the upstream's answer to the request, and any caller could otherwise spin the refresh
    /// token (and trip the breaker) by calling a path that always answers 401.
    /// Returns the token to retry with, if there is a new one.
    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? {
        if let current = self.currentSession?.access, current != token {
            return self.currentToken()
        }
        guard self.mayForceRefresh(path: path) else { return nil }
        if let session = self.currentSession, let receivedAt = session.receivedAt,
            self.clock.now.timeIntervalSince(receivedAt)
                < min(RefreshPolicy.forcedRefreshFloor, 0.25 * session.expiresAt.timeIntervalSince(receivedAt))
        {
            self.logger.debug("the upstream rejected a token issued moments ago; passing the 401 on")
            return nil
        }
        self.noteWaiter()
        if case .refreshing(_, let task) = self.state {
            _ = await task.value
        } else {
            self.logger.notice("the upstream rejected the current token; refreshing it")
            self.rejectedByUpstream = token
            await self.refresh(reason: "upstream_401")
        }
        if case .ready(let session) = self.state, let access = session.access, access != token {
            return access
        }
        return nil
    }

    // MARK: State helpers

    /// A grant's name for logs and `status`: the client grant is named by its source.
    func name(of grant: Grant) -> String {
        if case .clientCredentials = grant { return self.source.clientGrantName }
        return grant.name
    }

    var currentSession: Session? { self.state.session }

    static func unavailable(_ reason: String, retryAt: Date, now: Date) -> TokenUnavailableError {
        let wait = retryAt.timeIntervalSince(now)
        let seconds = wait.isFinite ? max(1, Int(min(wait, RefreshPolicy.longestLifetime).rounded(.up))) : 1
        return .tokenServerUnavailable(
            "\(reason); bearerd retries in \(seconds)s by itself",
            retryAfterSeconds: seconds
        )
    }
}
