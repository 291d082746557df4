import BearerdAuth
import Foundation
import Synchronization

/// One session's tokens, as kept across restarts.
package struct StoredSession: Sendable, Equatable {
    package var refreshToken: Secret?
    package var accessToken: BearerToken?
    package var accessExpiresAt: Date?
    /// The scope the server granted, when it said.
    package var scope: String?
    /// When the access token arrived: with the expiry, its lifetime, which sets the margins.
    package var receivedAt: Date?
    /// Set, and on disk, before the refresh token is sent; cleared by the answer. Found set at
    /// start, it means bearerd stopped with a refresh in flight: the server may have rotated the
    /// refresh token already, so the refresh is repeated at once, while a server's grace period
    /// for the previous refresh token (DOT, Auth0, Okta) still honours it.
    package var refreshSentAt: Date?

    package init(
        refreshToken: Secret? = nil,
        accessToken: BearerToken? = nil,
        accessExpiresAt: Date? = nil,
        scope: String? = nil,
        receivedAt: Date? = nil,
        refreshSentAt: Date? = nil
    ) {
        self.refreshToken = refreshToken
        self.accessToken = accessToken
        self.accessExpiresAt = accessExpiresAt
        self.scope = scope
        self.receivedAt = receivedAt
        self.refreshSentAt = refreshSentAt
    }

    var isEmpty: Bool { self.refreshToken == nil && self.accessToken == nil }

    /// The same session with its times moved by `seconds`: from the engine's steady clock to the
    /// wall clock the store keeps, and back (``TokenClock/wallOffset``).
    func shifted(by seconds: TimeInterval) -> StoredSession {
        guard seconds != 0, seconds.isFinite else { return self }
        var moved = self
        moved.accessExpiresAt = self.accessExpiresAt?.addingTimeInterval(seconds)
        moved.receivedAt = self.receivedAt?.addingTimeInterval(seconds)
        moved.refreshSentAt = self.refreshSentAt?.addingTimeInterval(seconds)
        return moved
    }
}

/// Everything the store holds: the user's session and the client's own token
/// (`client_credentials`), kept apart so that `bearerd logout` wipes the one and keeps the other.
package struct StoredTokens: Sendable, Equatable {
    package var user: StoredSession?
    package var client: StoredSession?
    /// The DPoP key (`auth.dpop`) the sessions' tokens are bound to; it outlives a logout.
    package var dpopKey: Secret?
    /// The client bearerd registered (`auth.discover`, RFC 7591); it outlives a logout.
    package var registration: ClientRegistration?

    package init(
        user: StoredSession? = nil,
        client: StoredSession? = nil,
        dpopKey: Secret? = nil,
        registration: ClientRegistration? = nil
    ) {
        self.user = user
        self.client = client
        self.dpopKey = dpopKey
        self.registration = registration
    }

    /// The same tokens with every time moved by `seconds` (``StoredSession/shifted(by:)``).
    func shifted(by seconds: TimeInterval) -> StoredTokens {
        StoredTokens(
            user: self.user?.shifted(by: seconds),
            client: self.client?.shifted(by: seconds),
            dpopKey: self.dpopKey,
            registration: self.registration
        )
    }

    /// A user session alone.
    package init(refreshToken: Secret?, accessToken: BearerToken? = nil, accessExpiresAt: Date? = nil) {
        self.init(
            user: StoredSession(refreshToken: refreshToken, accessToken: accessToken, accessExpiresAt: accessExpiresAt)
        )
    }
}

/// Where tokens are kept. The token engine saves the whole content after every change: a
/// refresh, a login, a logout, or a rejection by the token server (which drops the user part).
package protocol TokenStore: Sendable {
    func load() throws -> StoredTokens?
    func save(_ tokens: StoredTokens) throws
    /// Lets the store go (a file store's lock with it), once its session has stopped and its
    /// last write is done: another session or daemon may open it then. What comes after fails.
    func close()
}

extension TokenStore {
    package func close() {}
}

/// Keeps tokens in memory only: a restart starts again from `auth.refresh_token_file`.
package final class MemoryTokenStore: TokenStore {
    private let tokens: Mutex<StoredTokens?>

    package init(_ tokens: StoredTokens? = nil) {
        self.tokens = Mutex(tokens)
    }

    package func load() throws -> StoredTokens? { self.tokens.withLock { $0 } }
    package func save(_ tokens: StoredTokens) throws { self.tokens.withLock { $0 = tokens } }
}
