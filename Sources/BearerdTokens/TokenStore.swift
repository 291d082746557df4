import BearerdAuth
import Foundation
import Synchronization

/// Tokens worth keeping across restarts.
public struct StoredTokens: Sendable, Equatable {
    public var refreshToken: Secret?
    public var accessToken: BearerToken?
    public var accessExpiresAt: Date?

    public init(refreshToken: Secret?, accessToken: BearerToken? = nil, accessExpiresAt: Date? = nil) {
        self.refreshToken = refreshToken
        self.accessToken = accessToken
        self.accessExpiresAt = accessExpiresAt
    }
}

/// Where the user's tokens are kept. The token engine saves after every refresh and wipes only
/// when the token server rejected them.
public protocol TokenStore: Sendable {
    func load() throws -> StoredTokens?
    func save(_ tokens: StoredTokens) throws
    func wipe() throws
}

/// Keeps tokens in memory only: a restart starts again from `auth.refresh_token_file`.
public final class MemoryTokenStore: TokenStore {
    private let tokens: Mutex<StoredTokens?>

    public init(_ tokens: StoredTokens? = nil) {
        self.tokens = Mutex(tokens)
    }

    public func load() throws -> StoredTokens? { self.tokens.withLock { $0 } }
    public func save(_ tokens: StoredTokens) throws { self.tokens.withLock { $0 = tokens } }
    public func wipe() throws { self.tokens.withLock { $0 = nil } }
}
