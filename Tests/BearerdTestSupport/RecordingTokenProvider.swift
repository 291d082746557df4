import BearerdAuth
import Synchronization

/// A token provider for tests: hands out a fixed token (or an error) and records rejections.
/// With `replacement`, the first rejection of the current token switches to it, as a refresh would.
package final class RecordingTokenProvider: TokenProvider {
    private let state:
        Mutex<(token: BearerToken?, error: TokenUnavailableError?, rejected: [BearerToken], replacement: BearerToken?)>
    private let fresh = Mutex<[(BearerToken, Bool)]>([])
    private let asked = Mutex<(challenges: [ScopeChallenge], grant: BearerToken?)>(([], nil))

    /// What the proxy reported of 403s that asked for more.
    package var challenges: [ScopeChallenge] { self.asked.withLock { $0.challenges } }

    /// The token the next 403 that asks for more is answered with (a step-up), once.
    package func grantOnStepUp(_ token: String) {
        self.asked.withLock { $0.grant = BearerToken(token) }
    }

    package func upstreamAskedForMore(
        _ challenge: ScopeChallenge,
        token: BearerToken,
        path: String
    ) async
        -> BearerToken?
    {
        self.asked.withLock { state in
            state.challenges.append(challenge)
            defer { state.grant = nil }
            return state.grant
        }
    }

    /// A provider with `token`, or failing with `error` when the token is `nil`.
    package init(token: String?, error: TokenUnavailableError? = nil, replacement: String? = nil) {
        self.state = Mutex((token.map(BearerToken.init), error, [], replacement.map(BearerToken.init)))
    }

    /// Tokens the proxy reported as rejected by the upstream.
    package var rejected: [BearerToken] { self.state.withLock { $0.rejected } }

    /// What the proxy said of each request retried with a fresh token: the token, and whether the
    /// upstream refused it too.
    package var freshAnswers: [(token: BearerToken, refused: Bool)] { self.fresh.withLock { $0 } }

    package func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async {
        self.fresh.withLock { $0.append((token, refused)) }
    }

    package func currentToken() -> BearerToken? { self.state.withLock { $0.token } }

    package func token() async throws -> BearerToken {
        let (token, error) = self.state.withLock { ($0.token, $0.error) }
        if let token { return token }
        throw error ?? .notLoggedIn()
    }

    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? {
        self.state.withLock { state in
            state.rejected.append(token)
            guard state.token == token, let replacement = state.replacement else { return nil }
            state.token = replacement
            state.replacement = nil
            return replacement
        }
    }
}
