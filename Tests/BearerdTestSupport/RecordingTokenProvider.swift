import BearerdAuth
import Synchronization

/// A token provider for tests: hands out a fixed token (or an error) and records rejections.
public final class RecordingTokenProvider: TokenProvider {
    private let state: Mutex<(token: BearerToken?, error: TokenUnavailableError?, rejected: [BearerToken])>

    /// A provider with `token`, or failing with `error` when the token is `nil`.
    public init(token: String?, error: TokenUnavailableError? = nil) {
        self.state = Mutex((token.map(BearerToken.init), error, []))
    }

    /// Tokens the proxy reported as rejected by the upstream.
    public var rejected: [BearerToken] { self.state.withLock { $0.rejected } }

    public func currentToken() -> BearerToken? { self.state.withLock { $0.token } }

    public func token() async throws -> BearerToken {
        let (token, error) = self.state.withLock { ($0.token, $0.error) }
        if let token { return token }
        throw error ?? .notLoggedIn()
    }

    public func upstreamRejected(_ token: BearerToken) async -> BearerToken? {
        self.state.withLock { $0.rejected.append(token) }
        return nil
    }
}
