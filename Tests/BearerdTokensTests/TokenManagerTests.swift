import BearerdAuth
import BearerdTestSupport
import Foundation
import InMemoryLogging
import Logging
import Synchronization
import Testing

@testable import BearerdTokens

@Suite("Token manager: expiry, the critical section, errors", .timeLimit(.minutes(1)))
struct TokenManagerTests {
    @Test func expiryIsTheEarliestOfExpAndExpiresIn() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let earlyExp = jwt(#"{"exp":\#(Int(start.timeIntervalSince1970) + 100)}"#)
        let harness = TokenHarness { _, _ in FakeTokenEndpoint.tokens(access: earlyExp, expiresIn: 300) }
        _ = try await harness.manager.token()
        #expect(harness.offset(await harness.manager.currentSession?.expiresAt) == 100)

        let lateExp = jwt(#"{"exp":\#(Int(start.timeIntervalSince1970) + 600)}"#)
        let second = TokenHarness { _, _ in FakeTokenEndpoint.tokens(access: lateExp, expiresIn: 60) }
        _ = try await second.manager.token()
        #expect(second.offset(await second.manager.currentSession?.expiresAt) == 60)

        let neither = TokenHarness { _, _ in FakeTokenEndpoint.tokens(access: "opaque", expiresIn: nil) }
        _ = try await neither.manager.token()
        #expect(neither.offset(await neither.manager.currentSession?.expiresAt) == 3600, "default_lifetime")
    }

    /// Found by the token-response fuzzer: `expires_in` 1e300 trapped converting to `Duration`.
    /// Absurd lifetimes, from the server (`expires_in`, JWT `exp`) or a damaged store, are taken
    /// as ten years, and everything computed from them (status, logs, the timer) still works.
    @Test(arguments: [
        FakeTokenEndpoint.json(#"{"access_token":"opaque-token","expires_in":1e300}"#),
        FakeTokenEndpoint.json(#"{"access_token":"opaque-token","expires_in":"368888888888888888888888888888"}"#),
        FakeTokenEndpoint.tokens(access: jwt(#"{"exp":1e300}"#), expiresIn: nil),
    ])
    func anAbsurdLifetimeIsTakenAsTenYears(response: TokenHTTPResponse) async throws {
        let harness = TokenHarness { _, _ in response }
        _ = try await harness.manager.token()
        #expect(harness.offset(await harness.manager.currentSession?.expiresAt) == RefreshPolicy.longestLifetime)
        let status = await harness.manager.status()
        #expect(status.expiresIn == Int(RefreshPolicy.longestLifetime))
    }

    @Test func absurdDatesInTheStoreAreMadePlausible() async throws {
        let far = Date(timeIntervalSince1970: 1e308)
        let stored = StoredTokens(
            user: StoredSession(
                refreshToken: Secret("refresh-0001"),
                accessToken: BearerToken("access-0001"),
                accessExpiresAt: far,
                receivedAt: Date(timeIntervalSince1970: -1e308),
                refreshSentAt: far
            )
        )
        let harness = TokenHarness(stored: stored) { _, _ in FakeTokenEndpoint.tokens(access: "fresh-0002") }
        let status = await harness.manager.status()
        #expect(status.expiresIn == Int(RefreshPolicy.longestLifetime))
        #expect(status.nextRefreshAt == harness.clock.now, "the refresh-in-flight mark still means: refresh at once")
        #expect(harness.logText.contains("refresh was in flight"))
    }

    @Test func aSkewedServerClockCorrectsJWTExpAndWarnsOnce() async throws {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        // The server's clock is two minutes ahead: its exp, read on our clock, is two minutes late.
        let serverNow = start.addingTimeInterval(120)
        let token = jwt(#"{"exp":\#(Int(serverNow.timeIntervalSince1970) + 600)}"#)
        let harness = TokenHarness { _, _ in
            FakeTokenEndpoint.tokens(access: token, expiresIn: nil, headers: [("date", HTTPDate.format(serverNow))])
        }
        _ = try await harness.manager.token()
        #expect(harness.offset(await harness.manager.currentSession?.expiresAt) == 600)
        await harness.manager.refresh(reason: .proactive)
        #expect(harness.logs.entries.filter { $0.message.description.contains("clock differs") }.count == 1)
    }

    @Test func aThousandConcurrentCallersCauseOneRequest() async throws {
        let gate = Gate()
        let harness = TokenHarness { _, index in
            await gate.wait()
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)")
        }
        try await withThrowingTaskGroup(of: BearerToken.self) { group in
            for _ in 0..<1000 { group.addTask { try await harness.manager.token() } }
            while harness.endpoint.requests.isEmpty { await Task.yield() }
            await gate.open()
            var tokens = Set<BearerToken>()
            for try await token in group { tokens.insert(token) }
            #expect(tokens == [BearerToken("access-0")])
        }
        #expect(harness.endpoint.requests.count == 1)
        #expect(FakeTokenEndpoint.form(harness.endpoint.requests[0])["refresh_token"] == "seed-refresh-token-0001")
    }

    @Test func theNewestRefreshTokenIsKeptAndAnOldOneNeverResent() async throws {
        let harness = TokenHarness { request, index in
            // The second response rotates nothing: the server keeps the refresh token.
            FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: index == 1 ? nil : "refresh-\(index)")
        }
        for _ in 0..<3 {
            await harness.manager.refresh(reason: .proactive)
        }
        let sent = harness.endpoint.requests.map { FakeTokenEndpoint.form($0)["refresh_token"] ?? "" }
        #expect(sent == ["seed-refresh-token-0001", "refresh-0", "refresh-0"])
        #expect(try harness.store.load()?.user?.refreshToken == Secret("refresh-2"))
    }

    @Test(arguments: [
        (400, #"{"error":"invalid_grant","error_description":"revoked"}"#, "invalid_grant"),
        (401, #"{"error":"invalid_client"}"#, "invalid_client"),
        (400, "", "HTTP 400"),
        (403, "<html>forbidden</html>", "HTTP 403"),
        (404, #"{"message":"no such session"}"#, "HTTP 404"),
        (422, #"{"error":{"nested":true}}"#, "HTTP 422"),
    ])
    func everyRejectionWipesTheTokens(status: Int, body: String, code: String) async throws {
        let harness = TokenHarness(stored: StoredTokens(refreshToken: Secret("stored-refresh-token-77"))) { _, _ in
            TokenHTTPResponse(status: status, body: Array(body.utf8))
        }
        await #expect {
            try await harness.manager.token()
        } throws: { error in
            (error as? TokenUnavailableError)?.errorName == "not_logged_in" && "\(error)".contains("bearerd login")
        }
        #expect(try harness.store.load()?.user == nil)
        #expect(harness.logText.contains(code))
        #expect(!harness.logText.contains("stored-refresh-token-77"))
        #expect(!harness.logText.contains("client-secret-value-0042"))
    }

    @Test(arguments: [500, 502, 503, 408])
    func serverTroubleKeepsTheTokensAndBacksOff(status: Int) async throws {
        // A token that still serves for 5 minutes, due for its proactive refresh: the scheduler's
        // retries back off. (Callers with no token at all are probed for every 3 s instead:
        // OutageProbeTests.)
        let now = ManualTokenClock().now
        let session = StoredSession(
            refreshToken: Secret("stored-refresh-token-77"),
            accessToken: BearerToken("access-0"),
            accessExpiresAt: now.addingTimeInterval(300),
            receivedAt: now.addingTimeInterval(-3300)
        )
        let harness = TokenHarness(stored: StoredTokens(user: session)) { _, _ in TokenHTTPResponse(status: status) }
        for failures in 1...4 {
            await harness.manager.timerFired()
            #expect(try await harness.manager.token() == BearerToken("access-0"))
            guard case .waiting(_, let retryAt, _) = await harness.manager.state else {
                Issue.record("not waiting after \(failures) failures")
                return
            }
            // Full jitter with the harness's random 0.5: half of 1, 2, 4, 8 seconds.
            #expect(retryAt.timeIntervalSince(harness.clock.now) == 0.5 * pow(2, Double(failures - 1)))
            harness.clock.advance(to: retryAt)
        }
        #expect(harness.endpoint.requests.count == 4)
        #expect(try harness.store.load()?.user?.refreshToken == Secret("stored-refresh-token-77"))
    }

    @Test func whileTheServerFailsTheTokenIsUsedUntilItReallyExpires() async throws {
        let down = Mutex(false)
        let harness = TokenHarness(random: 1) { _, index in
            if down.withLock({ $0 }) { return TokenHTTPResponse(status: 503) }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 600)
        }
        _ = try await harness.manager.token()
        down.withLock { $0 = true }
        // Past the leeway (30 s before expiry), the refresh fails: the token still serves.
        harness.clock.advance(by: .seconds(580))
        #expect(try await harness.manager.token() == BearerToken("access-0"))
        #expect(harness.manager.currentToken() == BearerToken("access-0"))
        harness.clock.advance(by: .seconds(20))
        #expect(harness.manager.currentToken() == nil)
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
    }

    @Test func aNetworkErrorKeepsTheTokens() async throws {
        struct Refused: Error {}
        let stored = StoredTokens(refreshToken: Secret("stored-refresh-token-77"))
        let harness = TokenHarness(stored: stored) { _, _ in throw Refused() }
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        #expect(try harness.store.load()?.user?.refreshToken == Secret("stored-refresh-token-77"))
        // No answer, so the server may have rotated it: the next start refreshes at once.
        #expect(try harness.store.load()?.user?.refreshSentAt != nil)
    }

    @Test func retryAfterIsHonoured() async throws {
        let harness = TokenHarness { _, _ in TokenHTTPResponse(status: 429, headers: [("Retry-After", "7")]) }
        await #expect {
            try await harness.manager.token()
        } throws: { error in
            (error as? TokenUnavailableError)?.retryAfterSeconds == 7
        }
    }

    /// A token server's Retry-After is honoured up to an hour: 2^63 - 1 seconds, more digits than
    /// Int holds, or a date years ahead used to trap the scheduler or stop refreshing for years.
    @Test(arguments: ["9223372036854775807", "99999999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT", "3601"])
    func aHugeRetryAfterIsTakenAsAnHour(value: String) async throws {
        let harness = TokenHarness { _, _ in TokenHTTPResponse(status: 503, headers: [("Retry-After", value)]) }
        await #expect {
            try await harness.manager.token()
        } throws: { error in
            (error as? TokenUnavailableError)?.retryAfterSeconds == 3600
        }
        let (due, _) = await harness.manager.schedule()
        #expect(harness.offset(due) == 3600)
    }

    @Test func aDateHeaderADayOrMoreOffIsIgnored() async throws {
        let harness = TokenHarness { _, _ in
            TokenHTTPResponse(
                status: 200,
                headers: [("Date", "Fri, 31 Dec 9999 23:59:59 GMT")],
                body: Array(#"{"access_token":"a-token-0001","token_type":"Bearer","expires_in":600}"#.utf8)
            )
        }
        _ = try await harness.manager.token()
        let status = await harness.manager.status()
        #expect(harness.offset(status.expiresAt) == 600)
        #expect(!harness.logText.contains("clock differs"))
    }

    @Test func theBreakerHoldsBackAttemptsBeyondTheLimit() async throws {
        var policy = RefreshPolicy()
        policy.maxRefreshesPerMinute = 3
        // random 0: every backoff is 0 s, so only the breaker stands between failures and a hot loop.
        let harness = TokenHarness(policy: policy, random: 0) { _, _ in TokenHTTPResponse(status: 503) }
        // A caller every probe interval (3 s), when an attempt is due for it.
        for _ in 0..<5 {
            _ = try? await harness.manager.token()
            harness.clock.advance(by: .seconds(3))
        }
        #expect(harness.endpoint.requests.count == 3)
        guard case .waiting(_, let retryAt, let reason) = await harness.manager.state else {
            Issue.record("not waiting")
            return
        }
        #expect(harness.offset(retryAt) == 60 && reason.contains("max_refreshes_per_minute"))
        // A minute after the first attempt, the next is allowed.
        harness.clock.advance(to: retryAt)
        _ = try? await harness.manager.token()
        #expect(harness.endpoint.requests.count == 4)
        #expect(!harness.logText.contains("token refresh held back"), "the probes keep within the limit")
    }

    @Test func everythingRecoversWhenTheTokenServerComesBack() async throws {
        let down = Mutex(true)
        let harness = TokenHarness(random: 1) { _, index in
            if down.withLock({ $0 }) { return TokenHTTPResponse(status: 503) }
            return FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)", expiresIn: 600)
        }
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        down.withLock { $0 = false }
        // The next attempt for a caller with no token: one probe interval later.
        harness.clock.advance(by: .seconds(2))
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        harness.clock.advance(by: .seconds(1))
        #expect(try await harness.manager.token() == BearerToken("access-1"))
        #expect(harness.manager.currentToken() == BearerToken("access-1"))
    }

    @Test func aRejectedUserSessionFallsBackToTheClientToken() async throws {
        let source = OAuth2Source(
            settings: .init(
                endpoint: .tokenURL("https://auth.example/token"),
                clientID: "app",
                clientSecret: Secret("client-secret-value-0042"),
                clientCredentials: true
            )
        )
        let harness = TokenHarness(source: source) { request, _ in
            switch FakeTokenEndpoint.form(request)["grant_type"] {
            case "refresh_token": FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
            default: FakeTokenEndpoint.tokens(access: "client-access")
            }
        }
        #expect(try await harness.manager.token() == BearerToken("client-access"))
        #expect(await harness.manager.currentSession?.kind == .client)
    }

    @Test func anUpstream401RefreshesOnceAndAStale401DoesNot() async throws {
        let harness = TokenHarness { _, index in
            FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)")
        }
        let first = try await harness.manager.token()
        harness.clock.advance(by: .seconds(10))
        let retried = await harness.manager.upstreamRejected(first)
        #expect(retried == BearerToken("access-1"))
        #expect(harness.endpoint.requests.count == 2)
        // A request that was sent with the old token comes back 401 after the refresh.
        let stale = await harness.manager.upstreamRejected(first)
        #expect(stale == BearerToken("access-1"))
        #expect(harness.endpoint.requests.count == 2)
    }

    /// A path that always answers 401 cannot spin the refresh token: a token younger than the
    /// floor is not refreshed, however many 401s come back; and the breaker, tripped by
    /// whatever, never holds back an explicit login.
    @Test func repeated401sForAFreshTokenPassThroughAndTheBreakerSparesLogin() async throws {
        var policy = RefreshPolicy()
        policy.maxRefreshesPerMinute = 3
        let harness = TokenHarness(policy: policy) { _, index in
            FakeTokenEndpoint.tokens(access: "access-\(index)", refresh: "refresh-\(index)")
        }
        var token = try await harness.manager.token()
        for _ in 0..<30 {
            if let next = await harness.manager.upstreamRejected(token) { token = next }
        }
        #expect(harness.endpoint.requests.count == 1, "30 quick 401s refreshed nothing")
        // Each 401 after the floor may refresh once; the breaker then holds the rest back…
        for _ in 0..<5 {
            harness.clock.advance(by: .seconds(10))
            if let next = await harness.manager.upstreamRejected(token) { token = next }
        }
        #expect(harness.endpoint.requests.count == 3, "the breaker held back refreshes beyond 3 a minute")
        // …but not a person's login.
        try await harness.manager.logIn(username: "alice", password: Secret("pw"))
        #expect(harness.endpoint.requests.count == 4)
    }

    @Test func theLoginUsesThePasswordGrant() async throws {
        let harness = TokenHarness(seed: nil) { request, _ in
            let form = FakeTokenEndpoint.form(request)
            guard form["grant_type"] == "password", form["username"] == "alice", form["password"] == "alice-pass" else {
                return FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
            }
            return FakeTokenEndpoint.tokens(access: "alice-access", refresh: "alice-refresh")
        }
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        let refused = await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(username: "alice", password: Secret("not-alices-pass-7731"))
        }
        #expect(refused?.code == .login && refused?.message.contains("7731") == false)
        try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
        #expect(try await harness.manager.token() == BearerToken("alice-access"))
        #expect(try harness.store.load()?.user?.refreshToken == Secret("alice-refresh"))
        #expect(!harness.logText.contains("alice-pass") && !harness.logText.contains("alice-refresh"))
    }
}
