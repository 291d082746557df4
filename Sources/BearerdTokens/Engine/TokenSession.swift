import BearerdAuth
import Foundation

/// The tokens in hand: what the engine serves, refreshes with, and keeps in the store. Every time
/// is on the engine's clock (``TokenClock/now``).
struct TokenSession: Sendable, Equatable {
    enum Kind: String, Sendable, Equatable {
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
    var scope: String?
    var receivedAt: Date?
    /// Its expiry came from a wall-clock time no server's `Date` confirmed (the store, a
    /// fleet row, a JWT `exp` without a `Date` header): taken on this machine's wall clock,
    /// which a later step may show was wrong. A step forward then brings it earlier by as
    /// much (``RefreshStateMachine/clocksRead(_:now:)``); a step back leaves it, already the earlier.
    var wallAnchored = false

    /// What the store keeps of it.
    var stored: StoredSession {
        StoredSession(
            refreshToken: self.refreshToken,
            accessToken: self.access,
            accessExpiresAt: self.access == nil ? nil : self.expiresAt,
            scope: self.scope,
            receivedAt: self.access == nil ? nil : self.receivedAt
        )
    }

    /// A session read back from the store: a still-valid access token is used as it is (no
    /// refresh at boot); an expired one is refreshed at once.
    init(restoring stored: StoredSession, kind: Kind, now: Date, policy: RefreshPolicy) {
        // A damaged or hostile store may hold any date; the engine computes with plausible ones.
        let expiresAt = RefreshPolicy.plausible(stored.accessExpiresAt ?? now, around: now)
        // Kept until it really expires: usable while the token server is down (`.waiting`).
        let access = expiresAt > now ? stored.accessToken : nil
        // Margins as when it arrived (capped by its lifetime); without that time, the
        // configured ones.
        let receivedAt = RefreshPolicy.plausible(
            stored.receivedAt ?? expiresAt.addingTimeInterval(-policy.defaultLifetime.seconds),
            around: now
        )
        let usableUntil = access == nil ? now : policy.usableUntil(receivedAt: receivedAt, expiresAt: expiresAt)
        let refreshAt = policy.refreshTime(receivedAt: receivedAt, expiresAt: expiresAt, random: 0.5)
        self.init(
            kind: kind,
            access: access,
            expiresAt: expiresAt,
            usableUntil: usableUntil,
            refreshAt: usableUntil > now && stored.refreshSentAt == nil ? min(refreshAt, usableUntil) : now,
            refreshToken: stored.refreshToken,
            scope: stored.scope,
            receivedAt: stored.receivedAt
        )
        self.wallAnchored = true
    }

    init(
        kind: Kind,
        access: BearerToken?,
        expiresAt: Date,
        usableUntil: Date,
        refreshAt: Date,
        refreshToken: Secret?,
        scope: String? = nil,
        receivedAt: Date? = nil
    ) {
        self.kind = kind
        self.access = access
        self.expiresAt = expiresAt
        self.usableUntil = usableUntil
        self.refreshAt = refreshAt
        self.refreshToken = refreshToken
        self.scope = scope
        self.receivedAt = receivedAt
    }
}

extension TokenSession {
    /// A session of which only a refresh token is known (`auth.refresh_token_file`): refreshed at
    /// once.
    init(seed: Secret, now: Date) {
        self.init(kind: .user, access: nil, expiresAt: now, usableUntil: now, refreshAt: now, refreshToken: seed)
    }

    /// Its times `seconds` earlier: an expiry read on a wall clock that a step showed was ahead.
    func movedEarlier(by seconds: TimeInterval) -> TokenSession {
        var session = self
        session.expiresAt.addTimeInterval(-seconds)
        session.usableUntil.addTimeInterval(-seconds)
        session.refreshAt.addTimeInterval(-seconds)
        return session
    }

    /// A source that issues no refresh token (`auth.json.refresh_token: none`): the token serves
    /// until it expires, and then a login is needed.
    var servingUntilExpiry: TokenSession {
        var session = self
        session.refreshAt = session.expiresAt
        session.usableUntil = session.expiresAt
        return session
    }
}
