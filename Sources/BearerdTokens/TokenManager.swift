import BearerdAuth
import Foundation
import Logging
import Synchronization

/// Keeps a valid token ready, refreshes it through one critical section, and never logs a user
/// out because of a network blip.
///
/// Every refresh — proactive (``TokenRefreshService``), on demand (a request found the token
/// expired) or forced (the upstream answered 401) — is the `.refreshing` state, which holds the
/// one task that talks to the token endpoint; every caller that needs a token meanwhile awaits
/// that task. So a refresh token is sent once, whatever the number of callers.
public actor TokenManager: TokenProvider {
    /// The tokens in hand.
    struct Session: Sendable {
        enum Kind: Sendable {
            case user
            case client
        }

        var kind: Kind
        /// `nil` when only a refresh token is known (seeded, or loaded expired).
        var access: BearerToken?
        var expiresAt: Date
        var usableUntil: Date
        var refreshAt: Date
        var refreshToken: Secret?
    }

    enum State {
        /// No user session and no usable client grant.
        case loggedOut(reason: String)
        case ready(Session)
        /// The one refresh in flight; callers await the task, then look at the state again.
        case refreshing(Session?, Task<Void, Never>)
        /// The last attempt failed without rejecting the tokens: retry at `retryAt`.
        case waiting(Session?, retryAt: Date, reason: String)
    }

    enum Grant {
        case refreshToken(Secret)
        case clientCredentials
        case password(username: String, password: Secret)

        var name: String {
            switch self {
            case .refreshToken: "refresh_token"
            case .clientCredentials: "client_credentials"
            case .password: "password"
            }
        }
    }

    let source: any TokenSource
    let transport: any TokenTransport
    let store: any TokenStore
    let policy: RefreshPolicy
    let logger: Logger
    let random: @Sendable () -> Double
    nonisolated let clock: any TokenClock
    /// The token requests may use without a hop to the actor, and until when.
    nonisolated let snapshot = Mutex<(token: BearerToken, usableUntil: Date)?>(nil)

    var state: State
    var consecutiveFailures = 0
    var attempts: [Date] = []
    var skewWarned = false
    var lastOutcome: String?
    var generation = 0
    var changeWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
    var nextWaiterID = 0
    /// Tokens a failed write could not put on disk; written again every `saveRetryInterval`.
    var unsaved: StoredTokens?
    static let saveRetryInterval: TimeInterval = 5

    /// Starts from the store, or from `seed` (`auth.refresh_token_file`) when the store is empty.
    public init(
        source: any TokenSource,
        transport: any TokenTransport,
        store: any TokenStore,
        seed: Secret? = nil,
        policy: RefreshPolicy = RefreshPolicy(),
        clock: any TokenClock = SystemTokenClock(),
        logger: Logger,
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.source = source
        self.transport = transport
        self.store = store
        self.policy = policy
        self.clock = clock
        self.logger = logger
        self.random = random
        var stored: StoredTokens?
        do {
            stored = try store.load()
        } catch {
            logger.error("cannot read the token store; starting without it", metadata: ["error": "\(error)"])
        }
        let now = clock.now
        if let stored, stored.refreshToken != nil || stored.accessToken != nil {
            let expiresAt = stored.accessExpiresAt ?? now
            let session = Session(
                kind: .user,
                access: stored.accessToken,
                expiresAt: expiresAt,
                usableUntil: stored.accessToken == nil ? now : expiresAt.addingTimeInterval(-policy.leeway.seconds),
                refreshAt: stored.accessToken == nil
                    ? now : expiresAt.addingTimeInterval(-policy.minimumMargin.seconds),
                refreshToken: stored.refreshToken
            )
            self.state = .ready(session)
            if let access = session.access { self.snapshot.withLock { $0 = (access, session.usableUntil) } }
        } else if let seed {
            self.state = .ready(
                Session(kind: .user, access: nil, expiresAt: now, usableUntil: now, refreshAt: now, refreshToken: seed)
            )
        } else {
            self.state = .loggedOut(reason: "no token: run `bearerd login`")
        }
    }

    // MARK: TokenProvider

    public nonisolated func currentToken() -> BearerToken? {
        guard let (token, usableUntil) = self.snapshot.withLock({ $0 }) else { return nil }
        return self.clock.now < usableUntil ? token : nil
    }

    public func token() async throws -> BearerToken {
        var lastReason: String?
        for _ in 0..<4 {
            let now = self.clock.now
            switch self.state {
            case .ready(let session):
                if let access = session.access, now < session.usableUntil { return access }
                await self.refresh(reason: "expired")
            case .refreshing(_, let task):
                await task.value
            case .waiting(let session, let retryAt, let reason):
                // While the token server fails, the token is used until it really expires.
                if let session, let access = session.access, now < session.expiresAt { return access }
                lastReason = reason
                guard now >= retryAt else { throw Self.unavailable(reason, retryAt: retryAt, now: now) }
                await self.refresh(reason: "retry")
            case .loggedOut(let reason):
                guard self.source.hasClientGrant else { throw TokenUnavailableError.notLoggedIn(reason) }
                await self.refresh(reason: "client_token")
            }
        }
        throw TokenUnavailableError.tokenServerUnavailable(
            "no valid token after several refreshes: \(lastReason ?? self.lastOutcome ?? "the token server issues tokens that are already expired")",
            retryAfterSeconds: nil
        )
    }

    /// The upstream answered 401 to a request sent with `token`. Refreshes once if `token` is
    /// still the current one; if another request already replaced it, does not refresh again.
    /// Returns the token to retry with, if there is a new one.
    public func upstreamRejected(_ token: BearerToken) async -> BearerToken? {
        if let current = self.currentSession?.access, current != token {
            return self.currentToken()
        }
        if case .refreshing(_, let task) = self.state {
            await task.value
        } else {
            self.logger.notice("the upstream rejected the current token; refreshing it")
            await self.refresh(reason: "upstream_401")
        }
        if case .ready(let session) = self.state, let access = session.access, access != token {
            return access
        }
        return nil
    }

    // MARK: Logging in and out

    /// Logs in with the password grant, through the same critical section as refreshes.
    public func logIn(username: String, password: Secret) async throws {
        while case .refreshing(_, let task) = self.state { await task.value }
        self.start(.password(username: username, password: password), previous: nil, reason: "login")
        if case .refreshing(_, let task) = self.state { await task.value }
        guard case .ready(let session) = self.state, session.kind == .user else {
            throw TokenUnavailableError.notLoggedIn(self.lastOutcome ?? "the token server did not log you in")
        }
    }

    // MARK: State helpers

    var currentSession: Session? {
        switch self.state {
        case .ready(let session): session
        case .refreshing(let session, _), .waiting(let session, _, _): session
        case .loggedOut: nil
        }
    }

    static func unavailable(_ reason: String, retryAt: Date, now: Date) -> TokenUnavailableError {
        let seconds = max(1, Int(retryAt.timeIntervalSince(now).rounded(.up)))
        return .tokenServerUnavailable(
            "\(reason); bearerd retries in \(seconds)s by itself",
            retryAfterSeconds: seconds
        )
    }
}
