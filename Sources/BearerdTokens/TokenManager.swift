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
    /// How one attempt at the token endpoint ended, for the caller that asked for it.
    enum AttemptResult: Sendable {
        case issued
        case failed(String)
    }

    typealias State = RefreshStateMachine.State
    typealias Session = TokenSession

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

    /// The last attempt at the token endpoint, for `bearerd status`.
    struct LastRefresh: Sendable, Equatable {
        /// How it ended: compared by code, shown by ``result``.
        enum Outcome: Sendable, Equatable {
            case ok
            /// A 4xx: the server's `error`, or `HTTP <status>`.
            case rejected(String)
            case failed(String)
        }

        var at: Date
        var grant: String
        var outcome: Outcome

        /// What `status` and the refresh's span say.
        var result: String {
            switch self.outcome {
            case .ok: "ok"
            case .rejected(let code): "rejected (\(code))"
            case .failed(let why): "failed: \(why)"
            }
        }
    }

    /// What the engine talks to.
    nonisolated let ports: Ports
    let logger: Logger
    /// The rules: the state, the retries, the forced-refresh guard, the clocks' last reading.
    var machine: RefreshStateMachine
    /// The task of the one attempt in flight while `machine` is `.refreshing`.
    var inFlight: Task<AttemptResult, Never>?
    /// The snapshot and the next attempt, for the data path; the timer's wake-up.
    nonisolated let outbox = Outbox()
    /// What the store should hold: the user's session and the client token, apart.
    var stored: StoredTokens
    /// Whether `stored` is not on disk yet (a write failed); written again every
    /// ``RefreshStateMachine/saveRetryInterval``.
    var storeBehind = false
    /// The store was let go (``closeStore()``: its session stopped): nothing more is written.
    var storeClosed = false
    /// Where this host stands with the fleet's row (fleet mode only).
    var fleetRow = FleetPosition()
    /// The span of the refresh in flight (`tracing.endpoint`).
    var trace = RefreshTrace()
    /// Browser logins begun (`bearerd login`), waiting for their code.
    var authorizations = PendingAuthorizations()
    /// What the API asked for beyond the token (403 `insufficient_scope`).
    var scopeRequests = ScopeRequests()
    /// The last attempt at the token endpoint, for `status`.
    var lastRefresh: LastRefresh?
    /// The session's name in a config with `sessions:`: its messages say
    /// `bearerd login --session NAME`, and its metrics carry `session="NAME"`.
    nonisolated let sessionName: String?

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
        session: String? = nil,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.sessionName = session
        self.ports = Ports(
            source: source,
            transport: transport,
            store: store,
            seed: seed,
            fleet: fleet,
            fleetHost: host,
            verifier: verifier,
            proofKey: proofKey,
            tracer: tracer,
            clock: clock,
            clocks: clocks,
            random: random
        )
        self.logger = logger
        var loaded: StoredTokens?
        do {
            // The store keeps wall-clock times; the engine plans on its own clock.
            loaded = try store.load()?.shifted(by: -clock.wallOffset)
        } catch {
            logger.error("cannot read the token store; starting without it", metadata: ["error": "\(error)"])
        }
        var stored = loaded ?? StoredTokens()
        // A session of another source (a login before the config named auth.command) would be
        // refreshed at a server this source does not have.
        if stored.user?.isEmpty == true || !source.hasUserSessions { stored.user = nil }
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
        let state: State
        if fleet != nil {
            // Read under the fleet's lock by the first refresh, which the scheduler runs at once.
            state = .waiting(nil, retryAt: now, reason: "the fleet's session has not been read from its store yet")
        } else if let user = stored.user {
            state = .ready(Session(restoring: user, kind: .user, now: now, policy: policy))
        } else if loaded == nil, let seed {
            // Only an empty store is seeded: after a logout or a rejection the seed is spent.
            state = .ready(Session(seed: seed, now: now))
        } else if let client = stored.client {
            state = .ready(Session(restoring: client, kind: .client, now: now, policy: policy))
        } else {
            state = .loggedOut(reason: "no token: run `bearerd login`")
        }
        var machine = RefreshStateMachine(state: state, policy: policy, clientGrant: source.clientGrant)
        _ = machine.clocksRead(clocks.read(), now: now)
        self.machine = machine
        self.outbox.snapshot.withLock { $0 = machine.usable.map { ($0.token, $0.until) } }
        self.outbox.nextAttempt.withLock { $0 = machine.nextAttempt(now: now) }
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
        self.machine.policy = policy
    }

    var policy: RefreshPolicy { self.machine.policy }
    var state: State { self.machine.state }
    var currentSession: Session? { self.machine.state.session }

    // MARK: TokenProvider

    package nonisolated func currentToken() -> BearerToken? {
        guard let (token, usableUntil) = self.outbox.snapshot.withLock({ $0 }) else { return nil }
        return self.clock.now < usableUntil ? token : nil
    }

    package nonisolated func secondsUntilNextAttempt() -> Int? {
        guard let next = self.outbox.nextAttempt.withLock({ $0 }) else { return nil }
        let wait = next.timeIntervalSince(self.clock.now)
        return wait.isFinite ? max(1, Int(min(wait, RefreshPolicy.longestLifetime).rounded(.up))) : nil
    }

    /// A token for a request, waiting for the refresh it needs. How long a request waits is the
    /// caller's to bound (`proxy.token_wait`); every round here waits for a refresh or a retry
    /// time, so the number of attempts inside one wait does not end it early. The one loop that
    /// waits for nothing, a server that issues tokens already expired, ends after
    /// ``RefreshStateMachine/expiredIssuesPerRequest`` answers with a 503 that says when to come
    /// back.
    package func token() async throws -> BearerToken {
        self.noticeClockJumps()
        var expiredIssues = 0
        while true {
            let action = self.step { $0.tokenAsked(now: self.clock.now, expiredIssues: expiredIssues) }
            switch action {
            case .use(let token):
                return token
            case .fail(let error):
                throw self.namingSession(error)
            case .join:
                self.noteWaiter()
                await self.awaitInFlight(once: true)
            case .sleep(let until):
                try await self.clock.sleep(until: until)
            case .refresh(let reason):
                guard !self.storeClosed else { throw Self.stopped }
                self.noteWaiter()
                await self.refresh(reason: reason)
                if reason != .retry, self.machine.readyButUnusable(now: self.clock.now) { expiredIssues += 1 }
            }
        }
    }

    /// The upstream answered 401 to a request sent with `token`. Refreshes once if `token` is
    /// still the current one; if another request already replaced it, does not refresh again
    /// (``RefreshStateMachine/upstreamRejected(_:path:now:)``). Returns the token to retry with,
    /// if there is a new one.
    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? {
        switch self.step({ $0.upstreamRejected(token, path: path, now: self.clock.now) }) {
        case .useCurrent:
            return self.currentToken()
        case .passOn:
            return nil
        case .passOnFresh:
            self.logger.debug("the upstream rejected a token issued moments ago; passing the 401 on")
            return nil
        case .join:
            self.noteWaiter()
            await self.awaitInFlight(once: true)
        case .refresh:
            // Stopped (its store closed): a refresh it could not write would spend the refresh
            // token that the store, and the session loaded from it next, still holds.
            guard !self.storeClosed else { return nil }
            self.noteWaiter()
            self.logger.notice("the upstream rejected the current token; refreshing it")
            await self.refresh(reason: .upstream401)
        }
        if case .ready(let session) = self.state, let access = session.access, access != token {
            return access
        }
        return nil
    }

    /// What a request that needs a refresh is told once this session stopped.
    static let stopped = TokenUnavailableError.tokenServerUnavailable(
        "this session stopped (bearerd is stopping, a reload removed it, or it was unloaded while idle): send the request again",
        retryAfterSeconds: 1
    )

    // MARK: The funnel

    /// Every event goes to the machine through here; when the state moved, the snapshot the data
    /// path reads and the next attempt are published, and the timer plans again.
    func step<Result>(_ event: (inout RefreshStateMachine) -> Result) -> Result {
        let generation = self.machine.generation
        let result = event(&self.machine)
        if self.machine.generation != generation { self.publish() }
        return result
    }

    private func publish() {
        let usable = self.machine.usable
        self.outbox.snapshot.withLock { $0 = usable.map { ($0.token, $0.until) } }
        let next = self.machine.nextAttempt(now: self.clock.now)
        self.outbox.nextAttempt.withLock { $0 = next }
        self.outbox.changes.signal()
    }

    /// The attempt in flight, while there is one.
    var attemptInFlight: Task<AttemptResult, Never>? {
        guard self.state.isRefreshing else { return nil }
        return self.inFlight
    }

    /// Waits until no attempt is in flight (`once`: for the one in flight now).
    func awaitInFlight(once: Bool = false) async {
        while let task = self.attemptInFlight {
            _ = await task.value
            if once { return }
        }
    }

    /// A grant's name for logs and `status`: the client grant is named by its source.
    func name(of grant: Grant) -> String {
        if case .clientCredentials = grant { return self.source.clientGrantName }
        return grant.name
    }
}
