import Foundation

/// The session a fleet of bearerd shares, as one row holds it: its tokens and a version that
/// grows with every change of them, so a host can tell a newer session from the one it has.
package struct SharedSession: Sendable, Equatable {
    /// 0 while nothing was ever written.
    package var version: Int64
    package var tokens: StoredTokens?
    /// The host that wrote this version (a host name, never a token).
    package var writtenBy: String?
    package var writtenAt: Date?
    /// A refresh a host marked in flight and has not answered yet.
    package var inFlight: InFlightMark?

    package init(
        version: Int64,
        tokens: StoredTokens?,
        writtenBy: String? = nil,
        writtenAt: Date? = nil,
        inFlight: InFlightMark? = nil
    ) {
        self.version = version
        self.tokens = tokens
        self.writtenBy = writtenBy
        self.writtenAt = writtenAt
        self.inFlight = inFlight
    }
}

/// The refresh-in-flight mark of the fleet's row, as the database sees it now.
package struct InFlightMark: Sendable, Equatable {
    /// The host that marked it.
    package var host: String
    /// How long ago, by the database's clock (hosts' clocks may differ).
    package var age: TimeInterval
    /// Whether that host still has a connection to the database: a host that died has none.
    package var hostConnected: Bool
    /// Whether the database restarted, or this host lost it, since the mark: then a host without
    /// a connection now may only not have reconnected yet, with the answer in hand.
    package var databaseDisrupted: Bool

    package init(host: String, age: TimeInterval, hostConnected: Bool, databaseDisrupted: Bool = false) {
        self.host = host
        self.age = age
        self.hostConnected = hostConnected
        self.databaseDisrupted = databaseDisrupted
    }

    /// Whether the marking host's refresh may still be in flight, so that sending the same
    /// refresh token now could be its reuse: younger than `limit`, and its host connected, or
    /// not connected only because the database went away meanwhile. A host that lost its own
    /// connection while the database stayed up died: its refresh is repeated at once.
    package func mayStillBeInFlight(limit: TimeInterval) -> Bool {
        self.age < limit && (self.hostConnected || self.databaseDisrupted)
    }
}

/// What a host may do while it holds the fleet's refresh lock.
package protocol SharedSessionLease: Sendable {
    /// Writes `tokens` into the row if its version is still `expected` (the version read under
    /// the lock), else throws: a row changed meanwhile (a lock lost on the way) is never
    /// overwritten. `announce`: a new version, above `floor` too, told to every host; otherwise
    /// the version stays and nobody is told, and the row's refresh-in-flight mark is this host's
    /// if `tokens` carry `refreshSentAt` and cleared if they do not. Returns the version.
    func write(_ tokens: StoredTokens, announce: Bool, floor: Int64, expected: Int64) async throws -> Int64
}

/// A store several bearerd share (``TokenManager`` in fleet mode): every change of the session is
/// made while holding the fleet's one refresh lock, after reading the row again under it.
package protocol SharedSessionStore: Sendable {
    /// The row as it is now, without the lock.
    func read() async throws -> SharedSession
    /// Runs `body` holding the fleet's refresh lock, with the row as read under it. The lock ends
    /// with `body`, or with the host's connection if the host dies.
    func withRefreshLock<Result: Sendable>(
        _ body: @escaping @Sendable (SharedSession, any SharedSessionLease) async throws -> Result
    ) async throws -> Result
}
