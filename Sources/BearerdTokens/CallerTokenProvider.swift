import BearerdAuth
import Synchronization

/// The tokens of one connection to a `per_caller` session: those of the uid the kernel named for
/// it (``CallerSessions``), and nobody else's. A caller with no tokens here, or one the kernel
/// could not name, gets a 503 that says what to run; there is no shared token to fall back on.
///
/// Made once per connection: it keeps the caller's entry at hand, so that a request asks the
/// registry again only after that user's session was unloaded.
package final class CallerTokenProvider: TokenProvider {
    let sessions: CallerSessions
    let uid: UInt32?
    private let cached = Mutex<CallerSessions.Entry?>(nil)

    init(sessions: CallerSessions, uid: UInt32?) {
        self.sessions = sessions
        self.uid = uid
    }

    /// The caller's loaded entry, without waiting; `nil` when it is not in memory.
    private func live() -> CallerSessions.Entry? {
        if let entry = self.cached.withLock({ $0 }), entry.isLoaded {
            entry.lastUse.store(self.sessions.now(), ordering: .relaxed)
            return entry
        }
        guard let uid = self.uid, let entry = self.sessions.loaded(uid) else { return nil }
        self.cached.withLock { $0 = entry }
        return entry
    }

    package func currentToken() -> BearerToken? {
        self.live()?.manager.currentToken()
    }

    package func token() async throws -> BearerToken {
        guard let uid = self.uid else {
            throw TokenUnavailableError.notLoggedIn(
                "this session keeps a token for each local user, and the kernel did not say which user this connection is from: connect from this host (a unix socket, or 127.0.0.1)"
            )
        }
        var attempt = 0
        while true {
            attempt += 1
            guard let entry = try await self.sessions.entry(for: uid, create: false) else {
                throw TokenUnavailableError.notLoggedIn(
                    "no token for your user (uid \(uid)): \(self.sessions.loginHint)"
                )
            }
            self.cached.withLock { $0 = entry }
            do {
                return try await entry.manager.token()
            } catch  where !entry.isLoaded && attempt < 3 {
                // Unloaded while this request waited: its store is read again.
                continue
            }
        }
    }

    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? {
        await self.live()?.manager.upstreamRejected(token, path: path)
    }

    package func secondsUntilNextAttempt() -> Int? {
        self.live()?.manager.secondsUntilNextAttempt()
    }

    package func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async {
        await self.live()?.manager.freshTokenAnswered(token, refused: refused, path: path)
    }

    package func upstreamAskedForMore(
        _ challenge: ScopeChallenge,
        token: BearerToken,
        path: String
    ) async -> BearerToken? {
        await self.live()?.manager.upstreamAskedForMore(challenge, token: token, path: path)
    }
}

/// What the proxy holds for a `per_caller` session: it picks each connection's provider by the
/// caller's uid, and it alone gives no token.
package struct CallerTokens: TokenProvider {
    package let sessions: CallerSessions

    package init(sessions: CallerSessions) {
        self.sessions = sessions
    }

    package var needsCaller: Bool { true }

    package func forCaller(_ uid: UInt32?) -> any TokenProvider {
        CallerTokenProvider(sessions: self.sessions, uid: uid)
    }

    package func currentToken() -> BearerToken? { nil }

    package func token() async throws -> BearerToken {
        try await self.forCaller(nil).token()
    }

    package func upstreamRejected(_ token: BearerToken, path: String) async -> BearerToken? { nil }
}
