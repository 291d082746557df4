import BearerdAuth
import Foundation

/// The token engine's rules, as one value: what the engine does when a request asks for a token,
/// the timer fires, the upstream refuses a token, an attempt at the token server ends, or the
/// clocks show a suspend or a step. Each event takes `now` (the engine's clock) and returns what
/// to do; ``TokenManager`` does it (sends the grant, takes the fleet's lock, writes the store,
/// publishes the snapshot, logs). No I/O, no config, no logging here: the whole table is tested
/// as (state, event, now) → (state, action) in `RefreshStateMachineTests`.
///
/// The invariant bearerd exists for lives here: there is one attempt in flight (`.refreshing`)
/// at a time, and every caller that needs a token meanwhile waits for it (`.join`).
struct RefreshStateMachine: Sendable {
    enum State: Sendable, Equatable {
        /// No user session and no usable client grant.
        case loggedOut(reason: String)
        case ready(TokenSession)
        /// The one attempt in flight.
        case refreshing(TokenSession?)
        /// The last attempt failed without rejecting the tokens: retry at `retryAt`.
        case waiting(TokenSession?, retryAt: Date, reason: String)

        var session: TokenSession? {
            switch self {
            case .ready(let session): session
            case .refreshing(let session), .waiting(let session, _, _): session
            case .loggedOut: nil
            }
        }
    }

    /// What a request that asked for a token does next.
    enum TokenAction: Sendable, Equatable {
        case use(BearerToken)
        /// Starts an attempt (``attemptAsked(login:now:platformInputs:)``) and waits for it.
        case refresh(RefreshReason)
        /// Waits for the attempt in flight, then asks again.
        case join
        /// Just after a wake: waits for the next try rather than answer 503.
        case sleep(until: Date)
        case fail(TokenUnavailableError)
    }

    /// What a 401 from the upstream does.
    enum RejectAction: Sendable, Equatable {
        /// Another request already replaced the token: retry with the current one.
        case useCurrent
        /// The 401 is passed on: this path's 401s are paused, or the server asked to be left alone.
        case passOn
        /// The token was issued moments ago: the 401 is the upstream's answer to the request.
        case passOnFresh
        case join
        case refresh
    }

    /// Whether an attempt may begin.
    enum Admission: Sendable, Equatable {
        case send
        /// `auth.max_refreshes_per_minute`: the state now waits, and says why.
        case heldBack(String)
    }

    /// What to send for a refresh of `session`, or why nothing can be.
    enum GrantChoice: Sendable {
        case refreshToken(Secret)
        case clientGrant
        /// No refresh token and no client grant: the token serves until it expires.
        case serveUntilExpiry(TokenSession)
        case loggedOut(String)
    }

    /// How many answers with a token already unusable one request takes before its 503.
    static let expiredIssuesPerRequest = 3

    private(set) var state: State
    /// Bumped by every change of `state`: the engine publishes the snapshot when it moves.
    private(set) var generation = 0
    private(set) var retry = RetrySchedule()
    private(set) var forcedRefresh = ForcedRefreshGuard()
    private var clockWatch = ClockWatch()
    var policy: RefreshPolicy
    /// The client grant the source has, if any.
    let clientGrant: ClientGrant?
    /// Why the last attempt got no token, for messages; `nil` after a token.
    private(set) var lastOutcome: String?
    /// The platform's files the client grant sent (a fingerprint) when the last attempt began,
    /// and when the last client grant failed with them: while they stay as they were at the
    /// failure, retrying will not help; once the platform renews them the grant is tried at once.
    private(set) var platformInputsSent: Int?
    private(set) var platformInputsFailed: Int?
    /// The token of the 401 that asked for the refresh in flight.
    private(set) var rejectedByUpstream: BearerToken?
    /// Whether the token server's clock skew was said (once).
    private var skewWarned = false

    init(state: State, policy: RefreshPolicy, clientGrant: ClientGrant?) {
        self.state = state
        self.policy = policy
        self.clientGrant = clientGrant
    }

    // MARK: Events

    /// A request asks for a token; `expiredIssues`: how many answers this request already saw
    /// that were unusable at once.
    mutating func tokenAsked(now: Date, expiredIssues: Int) -> TokenAction {
        switch self.state {
        case .ready(let session):
            if let access = session.access, now < session.usableUntil { return .use(access) }
            guard expiredIssues < Self.expiredIssuesPerRequest else {
                let why = self.lastOutcome ?? "the token server issues tokens that are already expired"
                return .fail(
                    Self.unavailable("no valid token after \(expiredIssues) refreshes: \(why)", retryAt: now, now: now)
                )
            }
            return .refresh(.expired)
        case .refreshing:
            return .join
        case .waiting(let session, let retryAt, let reason):
            // While the token server fails, the token is used until it really expires.
            if let session, let access = session.access, now < session.expiresAt { return .use(access) }
            if self.retry.justWoke(now), !self.retry.holdsBack(now),
                retryAt.timeIntervalSince(now) <= RetrySchedule.wakeRetry
            {
                // The network is coming back after a wake: bounded, since the grace is
                // ``RetrySchedule/wakeGrace`` long and each wait reaches a later try.
                return retryAt > now ? .sleep(until: retryAt) : .refresh(.retry)
            }
            let probe = self.retry.probe(retryAt: retryAt, reason: reason, now: now, policy: self.policy)
            if probe.at != retryAt || probe.reason != reason {
                // The scheduler makes the attempt (and Retry-After says when) even if no caller
                // is there at that moment.
                self.enter(.waiting(session, retryAt: probe.at, reason: probe.reason), now: now)
            }
            guard now >= probe.at else { return .fail(Self.unavailable(reason, retryAt: probe.at, now: now)) }
            return .refresh(.retry)
        case .loggedOut(let reason):
            guard self.clientGrant != nil else { return .fail(.notLoggedIn(reason)) }
            return .refresh(.clientToken)
        }
    }

    /// Whether the session in hand is ready with no token a request may use.
    func readyButUnusable(now: Date) -> Bool {
        guard case .ready(let session) = self.state else { return false }
        return session.access == nil || now >= session.usableUntil
    }

    /// Whether the timer should read the platform's files (a refused client grant waits for them).
    var watchesPlatformInputs: Bool {
        if case .waiting = self.state { return self.platformInputsFailed != nil }
        return false
    }

    /// The timer fired; `platformInputs`: the platform's files now, when ``watchesPlatformInputs``.
    /// Returns the attempt to make, if one is due.
    mutating func timerFired(now: Date, platformInputs: Int?) -> RefreshReason? {
        switch self.state {
        case .ready(let session) where now >= session.refreshAt:
            return .proactive
        case .waiting(_, let retryAt, _) where now >= retryAt:
            return .retry
        case .waiting
        where self.platformInputsFailed != nil && platformInputs != nil
            && platformInputs != self.platformInputsFailed:
            self.platformInputsFailed = nil
            self.retry.release()
            return .platformTokenRenewed
        case .loggedOut where self.clientGrant != nil:
            return .clientToken
        default:
            return nil
        }
    }

    /// When the timer should look next (`nil`: only after a change). `saveBehind`: a write to
    /// the store or the fleet's row failed and is tried again every ``saveRetryInterval``.
    func nextWake(now: Date, saveBehind: Bool) -> Date? {
        var due: Date? =
            switch self.state {
            case .ready(let session): session.refreshAt
            case .waiting(_, let retryAt, _): retryAt
            case .refreshing: nil
            case .loggedOut: self.clientGrant != nil ? now : nil
            }
        if self.watchesPlatformInputs, let waitUntil = due {
            // Whether the platform renewed its token is a look at a local file.
            due = min(waitUntil, now.addingTimeInterval(Self.platformPollInterval))
        }
        guard saveBehind else { return due }
        let retrySave = now.addingTimeInterval(Self.saveRetryInterval)
        return min(due ?? retrySave, retrySave)
    }

    static let platformPollInterval: TimeInterval = 2
    static let saveRetryInterval: TimeInterval = 5

    /// The clocks were read: returns what happened since the last reading, after dealing with
    /// it. After a wake the backoff starts again and a waiting retry happens now (unless the
    /// server asked for later); after a step forward, an expiry taken on the wall clock alone
    /// comes as much earlier (the clock may have been behind when it was read: NTP at boot).
    /// Every other deadline is on the engine's clock, which a step does not move.
    mutating func clocksRead(_ reading: ClockReading, now: Date) -> [ClockJump] {
        let jumps = self.clockWatch.observe(reading)
        for jump in jumps {
            switch jump {
            case .suspended:
                self.retry.woke(at: now)
                if case .waiting(let session, let retryAt, let reason) = self.state, retryAt > now,
                    !self.retry.holdsBack(now)
                {
                    self.enter(.waiting(session, retryAt: now, reason: reason), now: now)
                }
            case .wallStepped(let seconds) where seconds > 0:
                switch self.state {
                case .ready(let session) where session.wallAnchored:
                    self.enter(.ready(session.movedEarlier(by: seconds)), now: now)
                case .waiting(let session?, let retryAt, let reason) where session.wallAnchored:
                    self.enter(.waiting(session.movedEarlier(by: seconds), retryAt: retryAt, reason: reason), now: now)
                case .ready, .waiting, .refreshing, .loggedOut:
                    break
                }
            case .wallStepped:
                break
            }
        }
        // The timer plans again from the state as the clock now shows it.
        if !jumps.isEmpty { self.generation &+= 1 }
        return jumps
    }

    /// The upstream answered 401 to a request for `path` sent with `token`. A token younger than
    /// ``RefreshPolicy/forcedRefreshFloor`` (or a quarter of its lifetime) is not refreshed, and
    /// neither is one whose path's 401s are paused (``ForcedRefreshGuard``), so no caller can
    /// spin the refresh token by calling a path that always answers 401.
    mutating func upstreamRejected(_ token: BearerToken, path: String, now: Date) -> RejectAction {
        if let current = self.state.session?.access, current != token { return .useCurrent }
        // A 401 does not hurry a try the server (or a refusal) asked bearerd to hold back.
        if case .waiting = self.state, self.retry.holdsBack(now) { return .passOn }
        guard self.forcedRefresh.mayForce(path: path, now: now) else { return .passOn }
        if let session = self.state.session, let receivedAt = session.receivedAt,
            now.timeIntervalSince(receivedAt)
                < min(RefreshPolicy.forcedRefreshFloor, 0.25 * session.expiresAt.timeIntervalSince(receivedAt))
        {
            return .passOnFresh
        }
        if case .refreshing = self.state { return .join }
        self.rejectedByUpstream = token
        return .refresh
    }

    /// The answer to a request for `path` retried with the fresh `token`: whether it paused that
    /// path's forced refreshes. A refusal of a token another refresh replaced since (a rotating
    /// server revokes it) says nothing of the path.
    mutating func freshTokenAnswered(_ token: BearerToken, path: String, refused: Bool, now: Date) -> Bool {
        if refused, let current = self.state.session?.access, current != token { return false }
        return self.forcedRefresh.freshTokenAnswered(path: path, refused: refused, now: now)
    }

    /// An attempt is asked for: it begins (`.refreshing`), or waits for the rate limit.
    mutating func attemptAsked(login: Bool, now: Date, platformInputs: Int?) -> Admission {
        let previous = self.state.session
        if let until = self.retry.admit(login: login, now: now, limit: self.policy.maxRefreshesPerMinute) {
            let why = RetrySchedule.rateLimited(self.policy.maxRefreshesPerMinute)
            self.lastOutcome = why
            self.enter(.waiting(previous, retryAt: until, reason: why), now: now)
            return .heldBack(why)
        }
        self.platformInputsSent = platformInputs
        self.enter(.refreshing(previous), now: now)
        return .send
    }

    /// What a refresh of `session` sends (the state's, or the fleet's row's).
    func choose(for session: TokenSession?, now: Date) -> GrantChoice {
        if let refreshToken = session?.refreshToken { return .refreshToken(refreshToken) }
        if self.clientGrant != nil { return .clientGrant }
        if let session, session.access != nil, now < session.expiresAt {
            return .serveUntilExpiry(session.servingUntilExpiry)
        }
        return .loggedOut("no refresh token: run `bearerd login`")
    }

    // MARK: How an attempt ended

    /// A token came: the session in use from now on.
    mutating func issued(_ session: TokenSession, now: Date) {
        self.retry.succeeded()
        self.lastOutcome = nil
        self.rejectedByUpstream = nil
        self.enter(.ready(session), now: now)
    }

    /// An attempt ended without a token, and nothing is retried by itself: a login refused or
    /// failed (the session in hand stays), a refresh token rejected (`state` is what is left).
    mutating func settled(_ state: State, why: String?, now: Date) {
        if let why { self.lastOutcome = why }
        self.rejectedByUpstream = nil
        self.enter(state, now: now)
    }

    /// The session was ended or replaced from outside (a logout, a fleet's row): the failures
    /// before do not carry on.
    mutating func replaced(with state: State, now: Date) {
        self.retry.reset()
        self.lastOutcome = nil
        self.enter(state, now: now)
    }

    /// What a failure says of the platform's files the client grant sends.
    enum PlatformFiles: Sendable, Equatable {
        /// The grant failed on them as they are: a renewed file is tried at once.
        case stale
        /// The failure was not theirs (an outage): wait out the backoff whatever they do.
        case notAtFault
        /// The failure says nothing of them (the fleet's store, a token that failed auth.verify):
        /// what was known stands.
        case unchanged
    }

    /// An attempt failed and is retried after the backoff, or when the server asked; `keep`
    /// serves meanwhile until it expires. Returns the delay. `random` is drawn only for a
    /// backoff.
    mutating func backOff(
        _ failure: RetrySchedule.Failure,
        why: String,
        reason: String,
        keep: TokenSession?,
        platformFiles: PlatformFiles = .notAtFault,
        now: Date,
        random: () -> Double
    ) -> TimeInterval {
        let delay = self.retry.failed(failure, now: now, policy: self.policy, random: random)
        switch platformFiles {
        case .stale: self.platformInputsFailed = self.platformInputsSent
        case .notAtFault: self.platformInputsFailed = nil
        case .unchanged: break
        }
        self.lastOutcome = why
        self.rejectedByUpstream = nil
        self.enter(.waiting(keep, retryAt: now.addingTimeInterval(delay), reason: reason), now: now)
        return delay
    }

    /// The one way `state` changes.
    private mutating func enter(_ state: State, now: Date) {
        if case .refreshing = self.state, !state.isRefreshing { self.retry.ended(at: now) }
        self.state = state
        if case .ready = state { self.platformInputsFailed = nil }
        self.generation &+= 1
    }

    /// The token server's clock differs from this machine's: returns whether to say so (the
    /// first time only).
    mutating func noteSkew() -> Bool {
        defer { self.skewWarned = true }
        return !self.skewWarned
    }

    // MARK: What the data path reads

    /// The token requests may use without the engine, and until when.
    var usable: (token: BearerToken, until: Date)? {
        switch self.state {
        case .ready(let session), .refreshing(let session?):
            session.access.map { ($0, session.usableUntil) }
        case .waiting(let session?, _, _):
            // The token server fails: use the token until it really expires, leeway or not.
            session.access.map { ($0, session.expiresAt) }
        case .loggedOut, .refreshing(nil), .waiting(nil, _, _):
            nil
        }
    }

    /// When the next attempt at a token happens: now while one is in flight, `retryAt` while
    /// waiting.
    func nextAttempt(now: Date) -> Date? {
        switch self.state {
        case .refreshing: now
        case .waiting(_, let retryAt, _): retryAt
        case .ready, .loggedOut: nil
        }
    }

    static func unavailable(_ reason: String, retryAt: Date, now: Date) -> TokenUnavailableError {
        let wait = retryAt.timeIntervalSince(now)
        let seconds = wait.isFinite ? max(1, Int(min(wait, RefreshPolicy.longestLifetime).rounded(.up))) : 1
        return .tokenServerUnavailable(
            "\(reason); bearerd retries in \(seconds)s by itself",
            retryAfterSeconds: seconds
        )
    }
}

extension RefreshStateMachine.State {
    var isRefreshing: Bool {
        if case .refreshing = self { return true }
        return false
    }
}
