/// Where the proxy gets the token it adds to each request.
///
/// The proxy calls ``currentToken()`` on its event loop for every request and falls back to
/// ``token()`` only when that returns `nil`, so a provider that keeps a valid token ready makes
/// no request wait. When the upstream answers 401 to a request sent with some token, the proxy
/// reports it through ``upstreamRejected(_:)``.
package protocol TokenProvider: Sendable {
    /// A token that is valid now, or `nil` if getting one means waiting. Must not block.
    func currentToken() -> BearerToken?

    /// A valid token, waiting for a refresh in flight if there is one.
    /// - Throws: ``TokenUnavailableError`` when no token can be had.
    func token() async throws -> BearerToken

    /// The upstream answered 401 to a request for `path` that carried `token`. Returns the token
    /// to retry that request with, when there is a new one (`nil`: do not retry).
    func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken?

    /// Seconds until the provider's next real attempt at a token (at least 1), for the
    /// `Retry-After` of a request that gave up waiting; `nil` when it cannot say. Must not block.
    func secondsUntilNextAttempt() -> Int?

    /// A request for `path` retried with the token ``upstreamRejected(_:path:)`` returned was
    /// answered: 401 (`refused`) or anything else. A path that refuses fresh tokens too is not
    /// the token's fault.
    func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async

    /// The upstream answered 403 asking for more than `token` has (RFC 6750 §3.1
    /// `insufficient_scope`, RFC 9470) to a request for `path`. The provider records it, and
    /// returns a token to retry with when it got one that has what was asked (`nil`: pass the
    /// 403 on).
    func upstreamAskedForMore(_ challenge: ScopeChallenge, token: BearerToken, path: String) async -> BearerToken?

    /// The provider of a connection from the local user `uid` (`nil`: the kernel did not say),
    /// asked once per connection. Every provider but a `per_caller` session's is its own.
    func forCaller(_ uid: UInt32?) -> any TokenProvider

    /// Whether ``forCaller(_:)`` needs the caller: each connection's caller is then asked of the
    /// kernel, whatever the lists and the access log need.
    var needsCaller: Bool { get }
}

extension TokenProvider {
    package func forCaller(_ uid: UInt32?) -> any TokenProvider { self }
    package var needsCaller: Bool { false }
    package func secondsUntilNextAttempt() -> Int? { nil }
    package func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async {}
    package func upstreamAskedForMore(
        _ challenge: ScopeChallenge,
        token: BearerToken,
        path: String
    ) async -> BearerToken? { nil }

    /// ``upstreamRejected(_:path:)`` for a request to `/`.
    package func upstreamRejected(_ token: BearerToken) async -> BearerToken? {
        await self.upstreamRejected(token, path: "/")
    }

    /// ``freshTokenAnswered(_:refused:path:)`` for a request to `/`.
    package func freshTokenAnswered(_ token: BearerToken, refused: Bool) async {
        await self.freshTokenAnswered(token, refused: refused, path: "/")
    }
}
