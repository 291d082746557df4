import BearerdAuth
import Foundation

/// When a 401 may force a refresh, per path: a path that answers 401 whatever the token (a
/// resource the account may not use, a misrouted request) would otherwise make bearerd rotate the
/// refresh token every ``RefreshPolicy/forcedRefreshFloor`` for ever. Once
/// ``RefreshPolicy/freshRejectionsBeforePause`` requests in a row to one path were refused again
/// with the fresh token their 401 brought, that path's 401s force none for
/// ``RefreshPolicy/forcedRefreshPause``; a revoked token met on any other path is still replaced
/// at its first 401. A path is keyed by its first segment as sent (``key(_:)``; what logs show of it
/// is ``PathPrefix``). A pure value:
/// the engine feeds it paths and times.
struct ForcedRefreshGuard: Sendable {
    struct Scope: Sendable, Equatable {
        var refusedInARow = 0
        var pausedUntil: Date?
        var lastSeen: Date
    }

    /// At most this many paths are remembered; the least recently seen one not paused goes first.
    static let mostScopes = 64

    private(set) var scopes: [String: Scope] = [:]
    /// How many pauses began, over the daemon's life (the first is said at warning).
    private(set) var pauses = 0

    /// The key of a request path: its first segment as sent, bounded, without query or fragment.
    /// Not ``PathPrefix``, which shows every segment that could be a credential as `/*`: two
    /// tenants' `/<uuid>/…` paths must not share one pause. The key is never logged.
    static func key(_ path: String) -> String {
        var key = Substring(path)
        if let end = key.firstIndex(where: { $0 == "?" || $0 == "#" }) { key = key[..<end] }
        if key.first == "/" {
            let rest = key.dropFirst()
            if let slash = rest.firstIndex(of: "/") { key = key[..<slash] }
        }
        return String(key.prefix(64))
    }

    /// Whether a 401 to a request for `path` may force a refresh at `now`.
    mutating func mayForce(path: String, now: Date) -> Bool {
        let key = Self.key(path)
        guard let until = self.scopes[key]?.pausedUntil else { return true }
        guard now >= until else { return false }
        self.scopes[key] = nil
        return true
    }

    /// A request to `path` retried with a fresh token was answered: 401 (`refused`) or not.
    /// Returns whether this answer began a pause of that path.
    mutating func freshTokenAnswered(path: String, refused: Bool, now: Date) -> Bool {
        let key = Self.key(path)
        if self.scopes[key]?.pausedUntil != nil { return false }
        guard refused else {
            self.scopes[key] = nil
            return false
        }
        if self.scopes[key] == nil { self.makeRoom(now: now) }
        var scope = self.scopes[key] ?? Scope(lastSeen: now)
        scope.lastSeen = now
        scope.refusedInARow += 1
        defer { self.scopes[key] = scope }
        guard scope.refusedInARow >= RefreshPolicy.freshRejectionsBeforePause else { return false }
        scope.refusedInARow = 0
        scope.pausedUntil = now.addingTimeInterval(RefreshPolicy.forcedRefreshPause)
        self.pauses += 1
        return true
    }

    /// Keeps the table bounded: the paths whose pause ended go, then the least recently seen.
    private mutating func makeRoom(now: Date) {
        guard self.scopes.count >= Self.mostScopes else { return }
        self.scopes = self.scopes.filter { _, scope in scope.pausedUntil.map { $0 > now } ?? true }
        while self.scopes.count >= Self.mostScopes,
            let oldest = self.scopes.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key
        {
            self.scopes[oldest] = nil
        }
    }
}
