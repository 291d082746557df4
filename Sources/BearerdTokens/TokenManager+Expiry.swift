import BearerdAuth
import Foundation
import Logging

/// When what a token server issued expires, on the engine's clock.
extension TokenManager {
    /// A session from what the server issued: expiry is the earliest of JWT `exp` (corrected
    /// for the server's clock skew), `expires_in` and an absolute `expiresAt`; with none of
    /// them, `auth.default_lifetime`. `exp` and `expiresAt` are times on the server's wall
    /// clock: the skew measured now (against this machine's wall clock) and the wall clock's
    /// offset from the engine's bring them onto the engine's clock, where no later step moves
    /// them.
    func session(
        _ issued: IssuedTokens,
        kind: Session.Kind,
        refreshToken: Secret?,
        receivedAt: Date,
        serverDate: Date?
    ) -> Session {
        var skew: TimeInterval = 0
        let wallOffset = self.clock.wallOffset
        if let serverDate {
            let offset = serverDate.timeIntervalSince(receivedAt.addingTimeInterval(wallOffset))
            // A clock a day or more off is a broken Date header, not a clock: ignored.
            if abs(offset) > self.policy.skewTolerance.seconds && abs(offset) < RefreshPolicy.largestSkew {
                skew = offset
                if self.machine.noteSkew() {
                    self.logger.warning(
                        "the token server's clock differs from this machine's; correcting token expiry for it",
                        metadata: ["offset_s": "\(Int(offset))"]
                    )
                }
            }
        }
        // A time on the server's wall clock, on the engine's. Without the server's `Date` there is
        // only this machine's wall clock to go by, and after a step either it or the engine's own
        // (the wall clock at start) may be the wrong one. A token just issued cannot have expired
        // already: of the two readings that leave it time, the earlier is taken.
        let onEngine = { (serverTime: TimeInterval) -> Date in
            let converted = Date(timeIntervalSince1970: serverTime - skew - wallOffset)
            guard serverDate == nil, wallOffset != 0 else { return converted }
            let readings = [converted, Date(timeIntervalSince1970: serverTime)]
            return readings.filter { $0 > receivedAt }.min() ?? readings.max()!
        }
        var candidates: [(at: Date, onWall: Bool)] = []
        if let exp = JWTClaims.expiry(of: issued.accessToken.value) { candidates.append((onEngine(exp), true)) }
        if let lifetime = issued.lifetime {
            candidates.append((receivedAt.addingTimeInterval(lifetime.seconds), false))
        }
        if let expiresAt = issued.expiresAt { candidates.append((onEngine(expiresAt.timeIntervalSince1970), true)) }
        let earliest = candidates.min { $0.at < $1.at }
        let expiresAt = RefreshPolicy.plausible(
            earliest?.at ?? receivedAt.addingTimeInterval(self.policy.defaultLifetime.seconds),
            around: receivedAt
        )
        var session = Session(
            kind: kind,
            access: issued.accessToken,
            expiresAt: expiresAt,
            usableUntil: self.policy.usableUntil(receivedAt: receivedAt, expiresAt: expiresAt),
            refreshAt: self.policy.refreshTime(receivedAt: receivedAt, expiresAt: expiresAt, random: self.random()),
            refreshToken: refreshToken,
            scope: issued.scope,
            receivedAt: receivedAt
        )
        session.wallAnchored = serverDate == nil && earliest?.onWall == true
        return session
    }
}
