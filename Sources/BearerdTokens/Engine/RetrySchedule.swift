import Foundation

/// When the engine may ask the token server again after an attempt that got no token: the
/// attempts of the last minute (`auth.max_refreshes_per_minute`), the failures in a row (the
/// backoff), the server's own `Retry-After`, when the last attempt ended (the outage probe) and
/// when the machine last woke from a suspend. Computed here once, for every kind of failure. A
/// pure value on the engine's clock: a wall-clock step does not move any of its times.
struct RetrySchedule: Sendable, Equatable {
    /// For this long after a wake, failing to reach the token server is the network coming back
    /// (no route, DNS, refused): it counts toward neither the backoff nor
    /// `auth.max_refreshes_per_minute`, the engine tries again every ``wakeRetry``, and a request
    /// that finds no token waits for the next try (within `proxy.token_wait`) instead of a 503.
    static let wakeGrace: TimeInterval = 30
    static let wakeRetry: TimeInterval = 1

    /// Failures in a row since the last token.
    private(set) var failures = 0
    /// When the attempts of the last minute began, oldest first.
    private(set) var attempts: [Date] = []
    /// Until when the server (its `Retry-After`), or a refusal, asked to be left alone.
    private(set) var heldUntil: Date?
    /// When the last attempt ended: the probe interval counts from there.
    private(set) var lastAttemptEnded: Date?
    /// When the machine last woke from a suspend.
    private(set) var wokeAt: Date?

    /// Why an attempt is held back by `auth.max_refreshes_per_minute`.
    static func rateLimited(_ limit: Int) -> String {
        "more than \(limit) refresh attempts in a minute (auth.max_refreshes_per_minute)"
    }

    /// An attempt is about to begin at `now`. Returns when it may begin instead, if the last
    /// minute's attempts reached `limit`; else counts it. A login is never held back: a person
    /// asked for it, and it is the way out of whatever tripped the limit.
    mutating func admit(login: Bool, now: Date, limit: Int) -> Date? {
        self.attempts.removeAll { now.timeIntervalSince($0) >= 60 }
        if !login, self.attempts.count >= limit, let oldest = self.attempts.first {
            return oldest.addingTimeInterval(60)
        }
        self.attempts.append(now)
        return nil
    }

    /// An attempt ended (with or without a token).
    mutating func ended(at now: Date) {
        self.lastAttemptEnded = now
    }

    /// A token came: the failures are over, and so is the server's hold.
    mutating func succeeded() {
        self.failures = 0
        self.heldUntil = nil
    }

    /// The session was ended or replaced from outside (a logout, a fleet's row): the backoff of
    /// the failures before does not carry on.
    mutating func reset() {
        self.failures = 0
    }

    /// Whether the server (or a refusal) asked to be left alone at `now`.
    func holdsBack(_ now: Date) -> Bool {
        self.heldUntil.map { $0 > now } ?? false
    }

    /// Whether `now` is within ``wakeGrace`` of a wake.
    func justWoke(_ now: Date) -> Bool {
        guard let woke = self.wokeAt else { return false }
        return now >= woke && now.timeIntervalSince(woke) < Self.wakeGrace
    }

    /// The machine woke at `now`: a new network, perhaps, so the backoff of the failures before
    /// the sleep does not carry on (a server's `Retry-After` stands).
    mutating func woke(at now: Date) {
        self.wokeAt = now
        self.failures = 0
    }

    /// How a failure counts.
    enum Failure: Sendable, Equatable {
        /// No answer, or a 5xx/408/429/unreadable answer (`answered`), with the server's
        /// `Retry-After` if it sent one. Waiting callers may probe before the backoff ends.
        case outage(answered: Bool, retryAfter: Duration?)
        /// An answer that will not change if asked again at once (a refused client grant, a
        /// token that failed `auth.verify`): waiting callers do not hurry the next attempt.
        case refusal
        /// The fleet's store could not be had: backoff, and callers may probe.
        case storeUnavailable
    }

    /// A failure at `now`: returns how long until the next attempt.
    mutating func failed(
        _ failure: Failure,
        now: Date,
        policy: RefreshPolicy,
        random: () -> Double
    ) -> TimeInterval {
        switch failure {
        case .outage(answered: false, _) where self.justWoke(now):
            // No answer just after a wake: the network coming back, not an outage of the token
            // server (which was not reached, so not loaded either).
            if !self.attempts.isEmpty { self.attempts.removeLast() }
            self.heldUntil = nil
            return Self.wakeRetry
        case .outage(_, let retryAfter):
            self.failures += 1
            // The random draw only when there is a backoff to jitter.
            let delay = retryAfter?.seconds ?? policy.backoff(failures: self.failures, random: random()).seconds
            // The server's own word on when to come back stands, even for waiting callers.
            self.heldUntil = retryAfter.map { now.addingTimeInterval($0.seconds) }
            return delay
        case .refusal:
            self.failures += 1
            let delay = policy.backoff(failures: self.failures, random: random()).seconds
            self.heldUntil = now.addingTimeInterval(delay)
            return delay
        case .storeUnavailable:
            self.failures += 1
            return policy.backoff(failures: self.failures, random: random()).seconds
        }
    }

    /// The platform renewed what a refused client grant sends: it is tried at once.
    mutating func release() {
        self.heldUntil = nil
    }

    /// When the next attempt is made for a caller that found no usable token while the state
    /// waits until `retryAt` for `reason`: one attempt every `policy.probeInterval` after the
    /// last one ended, however long (or short) the backoff after a run of failures is, within
    /// `auth.max_refreshes_per_minute`, and never before a time the server asked for.
    func probe(retryAt: Date, reason: String, now: Date, policy: RefreshPolicy) -> (at: Date, reason: String) {
        if self.holdsBack(now) { return (retryAt, reason) }
        let recent = self.attempts.filter { now.timeIntervalSince($0) < 60 }
        let last = [recent.last, self.lastAttemptEnded].compactMap { $0 }.max()
        let probeAt = max(last.map { $0.addingTimeInterval(policy.probeInterval.seconds) } ?? now, now)
        if recent.count >= policy.maxRefreshesPerMinute, let oldest = recent.first,
            oldest.addingTimeInterval(60) > probeAt
        {
            return (oldest.addingTimeInterval(60), Self.rateLimited(policy.maxRefreshesPerMinute))
        }
        return (probeAt, reason)
    }
}
