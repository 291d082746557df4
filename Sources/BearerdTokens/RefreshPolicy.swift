import Foundation

/// The timing rules of the token engine, in one place so they read as a table.
package struct RefreshPolicy: Sendable {
    /// A token this close to its expiry counts as expired (`auth.leeway`), at most a quarter of
    /// its lifetime (so short-lived tokens stay usable and are refreshed before that point).
    package var leeway: Duration = .seconds(30)
    /// Lifetime of a token whose response says nothing about it (`auth.default_lifetime`).
    package var defaultLifetime: Duration = .seconds(3600)
    /// The proactive refresh happens this long before expiry at least (`auth.refresh_margin`)…
    package var minimumMargin: Duration = .seconds(60)
    /// …or 10 % of the lifetime if that is more, never more than half of it; ± this fraction.
    package var jitter: Double = 0.1
    /// Backoff after a failed refresh: full jitter, doubling from `backoffBase` to `backoffCap`.
    package var backoffBase: Duration = .seconds(1)
    package var backoffCap: Duration = .seconds(300)
    /// While callers wait for a token (none is usable), an attempt at least this often, whatever
    /// the backoff: service is back within about this long after the token server is.
    package var probeInterval: Duration = .seconds(3)
    /// At most this many refresh attempts in any minute (`auth.max_refreshes_per_minute`).
    package var maxRefreshesPerMinute: Int = 30
    /// How long a refresh another host marked in flight may still be under way (its token
    /// request, a verification, a DPoP nonce retry: three times `auth.request_timeout`, and a
    /// margin): while it is younger and that host still connected, no other host repeats it.
    package var inFlightLimit: Duration = .seconds(35)
    /// A token server clock further off than this corrects JWT `exp` (and warns once).
    package var skewTolerance: Duration = .seconds(5)

    /// `auth.scope_step_up`: a client token gets the scopes the API asks for, when allowed.
    package var scopeStepUp = false
    /// `auth.scope_step_up_allow`.
    package var scopeStepUpAllowed: Set<String> = []

    package init() {}

    /// When to refresh a token that expires at `expiresAt` and was received at `receivedAt`;
    /// `random` is uniform in 0..<1.
    func refreshTime(receivedAt: Date, expiresAt: Date, random: Double) -> Date {
        let lifetime = max(0, expiresAt.timeIntervalSince(receivedAt))
        let margin = min(max(self.minimumMargin.seconds, 0.1 * lifetime), 0.5 * lifetime)
        let jittered = margin * (1 + self.jitter * (2 * random - 1))
        return expiresAt.addingTimeInterval(-jittered)
    }

    /// Until when a token counts as valid.
    func usableUntil(receivedAt: Date, expiresAt: Date) -> Date {
        let lifetime = max(0, expiresAt.timeIntervalSince(receivedAt))
        return expiresAt.addingTimeInterval(-min(self.leeway.seconds, 0.25 * lifetime))
    }

    /// The longest lifetime the engine takes from a token server or the store: ten years. Servers
    /// and damaged files can say 1e300 seconds, which neither `Duration` nor `Int` holds; a token
    /// that really lives longer is refreshed at its first 401 instead.
    static let longestLifetime: TimeInterval = 10 * 365 * 86_400

    /// A 401 from the upstream forces a refresh only for a token at least this old (seconds).
    static let forcedRefreshFloor: TimeInterval = 10

    /// Requests in a row refused with their token and again with the fresh one a forced refresh
    /// brought, before 401s force no refresh for ``forcedRefreshPause`` seconds.
    static let freshRejectionsBeforePause = 2
    static let forcedRefreshPause: TimeInterval = 300

    /// The largest clock difference taken from a token server's `Date`: a day. Beyond it the
    /// header is ignored, so a wrong `Date` cannot make every token look expired or eternal.
    static let largestSkew: TimeInterval = 86_400

    /// `date`, moved to within ``longestLifetime`` of `now`.
    static func plausible(_ date: Date, around now: Date) -> Date {
        min(max(date, now.addingTimeInterval(-Self.longestLifetime)), now.addingTimeInterval(Self.longestLifetime))
    }

    /// The wait after `failures` failed attempts in a row (≥ 1); `random` is uniform in 0..<1.
    func backoff(failures: Int, random: Double) -> Duration {
        let ceiling = min(self.backoffCap.seconds, self.backoffBase.seconds * pow(2, Double(min(failures, 40) - 1)))
        return .seconds(ceiling * random)
    }
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
