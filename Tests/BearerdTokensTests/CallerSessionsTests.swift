import BearerdAuth
import BearerdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BearerdTokens

/// The token sets of a `per_caller` session: one manager per uid, loaded once, unloaded when
/// idle or beyond the limit, never a token of another uid, never a refresh once unloaded.
@Suite struct CallerSessionsTests {
    /// A monotonic clock the test moves.
    final class Ticker: Sendable {
        let nanoseconds = Atomic<Int64>(1_000_000_000)
        func advance(seconds: Int64) { self.nanoseconds.add(seconds * 1_000_000_000, ordering: .relaxed) }
        var now: Int64 { self.nanoseconds.load(ordering: .relaxed) }
    }

    /// Users whose stores are memory stores; each one's refresh token names their uid, and so
    /// does the access token the fake endpoint gives for it.
    /// The stores and how often each uid's manager was made.
    final class Books: Sendable {
        let made = Mutex<[UInt32: Int]>([:])
        let stores = Mutex<[UInt32: MemoryTokenStore]>([:])
    }

    struct Fixture {
        let ticker = Ticker()
        let books = Books()
        let clock = ManualTokenClock()
        let endpoint: FakeTokenEndpoint
        let sessions: CallerSessions

        init(limits: CallerSessions.Limits = .init(maxLoaded: 10, idleUnload: .seconds(60)), loggedIn: [UInt32]) {
            let endpoint = FakeTokenEndpoint { request, _ in
                let form = String(decoding: request.body ?? [], as: UTF8.self)
                let uid =
                    form.split(separator: "&").first { $0.hasPrefix("refresh_token=rt-") }?
                    .dropFirst("refresh_token=rt-".count) ?? "?"
                return FakeTokenEndpoint.tokens(access: "at-\(uid)", refresh: "rt-\(uid)", expiresIn: 300)
            }
            let books = self.books
            for uid in loggedIn {
                books.stores.withLock { $0[uid] = MemoryTokenStore(StoredTokens(refreshToken: Secret("rt-\(uid)"))) }
            }
            let ticker = self.ticker
            let clock = self.clock
            self.endpoint = endpoint
            self.sessions = CallerSessions(
                session: "api",
                limits: limits,
                policy: RefreshPolicy(),
                logger: Logger(label: "callers-test"),
                now: { ticker.now },
                factory: { uid, create, policy in
                    let store = books.stores.withLock { stores -> MemoryTokenStore? in
                        if stores[uid] == nil && create { stores[uid] = MemoryTokenStore() }
                        return stores[uid]
                    }
                    guard let store else { return nil }
                    books.made.withLock { $0[uid, default: 0] += 1 }
                    return TokenManager(
                        source: TokenHarness.source,
                        transport: endpoint,
                        store: store,
                        policy: policy,
                        clock: clock,
                        logger: Logger(label: "callers-test"),
                        session: "api"
                    )
                }
            )
        }

        func provider(_ uid: UInt32?) -> any TokenProvider {
            CallerTokens(sessions: self.sessions).forCaller(uid)
        }
    }

    @Test func eachCallerGetsTheirOwnTokenAndNobodysElse() async throws {
        let fixture = Fixture(loggedIn: [1001, 1002])
        #expect(try await fixture.provider(1001).token().value == "at-1001")
        #expect(try await fixture.provider(1002).token().value == "at-1002")
        // The second request of a connection finds the token at once.
        let connection = fixture.provider(1001)
        _ = try await connection.token()
        #expect(connection.currentToken()?.value == "at-1001")
        #expect(fixture.provider(1002).currentToken()?.value == "at-1002")
    }

    @Test func aCallerWhoNeverLoggedInIsToldWhatToRunAndNothingIsSent() async throws {
        let fixture = Fixture(loggedIn: [1001])
        for uid: UInt32? in [1003, nil] {
            let provider = fixture.provider(uid)
            #expect(provider.currentToken() == nil)
            do {
                _ = try await provider.token()
                Issue.record("uid \(String(describing: uid)) got a token")
            } catch let error as TokenUnavailableError {
                #expect(error.code == .notLoggedIn)
                if uid != nil { #expect(error.message.contains("bearerd login --session api")) }
            }
        }
        #expect(fixture.endpoint.requests.isEmpty)
        // Asking made no store for them.
        #expect(fixture.books.stores.withLock { $0[1003] } == nil)
    }

    @Test func manyRequestsOfOneUserLoadTheirStoreOnceAndRefreshOnce() async throws {
        let fixture = Fixture(loggedIn: [1001])
        try await withThrowingTaskGroup(of: String.self) { tasks in
            for _ in 0..<50 { tasks.addTask { try await fixture.provider(1001).token().value } }
            for try await value in tasks { #expect(value == "at-1001") }
        }
        #expect(fixture.books.made.withLock { $0[1001] } == 1)
        #expect(fixture.endpoint.requests.count == 1)
    }

    @Test func anIdleUserIsUnloadedAndComesBackFromTheirStore() async throws {
        let fixture = Fixture(loggedIn: [1001, 1002])
        let first = try await fixture.sessions.manager(for: 1001)
        _ = try await fixture.provider(1001).token()
        _ = try await fixture.provider(1002).token()
        fixture.ticker.advance(seconds: 30)
        _ = fixture.provider(1002).currentToken()  // 1002 is used; 1001 is not
        fixture.ticker.advance(seconds: 40)
        #expect(await fixture.sessions.sweep() == 1)
        #expect(fixture.sessions.loadedCount == 1)
        // Its store keeps the rotated refresh token; the next request loads it from there.
        #expect(try await fixture.provider(1001).token().value == "at-1001")
        #expect(fixture.books.made.withLock { $0[1001] } == 2)
        #expect(try await fixture.sessions.manager(for: 1001) !== first)
        await fixture.sessions.close()
    }

    @Test func beyondTheLimitTheLeastRecentlyUsedUserIsUnloaded() async throws {
        let fixture = Fixture(limits: .init(maxLoaded: 2, idleUnload: .seconds(600)), loggedIn: [1, 2, 3])
        _ = try await fixture.provider(1).token()
        fixture.ticker.advance(seconds: 1)
        _ = try await fixture.provider(2).token()
        fixture.ticker.advance(seconds: 1)
        _ = fixture.provider(1).currentToken()  // 1 used again: 2 is the oldest
        fixture.ticker.advance(seconds: 1)
        _ = try await fixture.provider(3).token()
        #expect(fixture.sessions.loadedCount == 2)
        #expect(fixture.sessions.loaded(2) == nil && fixture.sessions.loaded(1) != nil)
        await fixture.sessions.close()
    }

    @Test func anUnloadedUsersManagerSendsNoRefresh() async throws {
        let fixture = Fixture(loggedIn: [1001])
        let manager = try #require(try await fixture.sessions.manager(for: 1001))
        _ = try await manager.token()
        await fixture.sessions.close()
        let before = fixture.endpoint.requests.count
        // A request that held the old manager finds its token expired, or gets a 401: no refresh
        // with the stored refresh token, which the next load of this user would send again.
        fixture.clock.advance(by: .seconds(400))
        await #expect(throws: TokenUnavailableError.self) { try await manager.token() }
        #expect(fixture.endpoint.requests.count == before)
        // And nothing loads once the session stopped.
        await #expect(throws: TokenUnavailableError.self) { try await fixture.provider(1001).token() }
    }

    @Test func theCeilingHoldsEveryUserTogetherAndNoOneUserTakesItAll() async throws {
        let ticker = Ticker()
        let endpoint = FakeTokenEndpoint { _, _ in FakeTokenEndpoint.tokens(access: "x") }
        let ceiling = RefreshCeiling(endpoint, limit: 4, now: { ticker.now })
        let request = TokenHTTPRequest(url: "https://auth.example/token", body: Array("grant_type=refresh_token".utf8))
        let (one, two, three) = (ceiling.forUser(1), ceiling.forUser(2), ceiling.forUser(3))
        // One user: half of the ceiling, however hard they try.
        for _ in 0..<2 { _ = try await one.send(request) }
        await #expect(throws: RefreshCeiling.Reached.self) { try await one.send(request) }
        // The others still get theirs, up to the ceiling for all.
        for _ in 0..<2 { _ = try await two.send(request) }
        await #expect(throws: RefreshCeiling.Reached.self) { try await three.send(request) }
        #expect(endpoint.requests.count == 4)
        ticker.advance(seconds: 61)
        _ = try await three.send(request)
        _ = try await one.send(request)
        #expect(endpoint.requests.count == 6)
    }

    @Test func aUserInTheMiddleOfALoginIsNotUnloaded() async throws {
        let fixture = Fixture(limits: .init(maxLoaded: 1, idleUnload: .seconds(60)), loggedIn: [1001, 1002])
        try await fixture.sessions.withManager(for: 1001, create: false) { manager in
            fixture.ticker.advance(seconds: 120)
            #expect(await fixture.sessions.sweep() == 0)
            // Nor by the limit: another user loads beside it.
            _ = try await fixture.provider(1002).token()
            #expect(fixture.sessions.loaded(1001) != nil)
            #expect(manager != nil)
        }
        // A browser login begun keeps its user while it waits for the code.
        try await fixture.sessions.withManager(for: 1001, create: false, keep: .seconds(300)) { _ in }
        fixture.ticker.advance(seconds: 200)
        await fixture.sessions.sweep()
        #expect(fixture.sessions.loaded(1001) != nil)
        fixture.ticker.advance(seconds: 200)
        await fixture.sessions.sweep()
        #expect(fixture.sessions.loaded(1001) == nil)
        await fixture.sessions.close()
    }
}
