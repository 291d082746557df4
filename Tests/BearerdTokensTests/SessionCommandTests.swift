import BearerdAuth
import BearerdTestSupport
import Foundation
import Logging
import Synchronization
import Testing

@testable import BearerdTokens

/// The engine behind `bearerd login`, `logout` and `status`.
@Suite("Login, logout and status", .timeLimit(.minutes(1)))
struct SessionCommandTests {
    static let source = OAuth2Source(
        settings: .init(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: Secret("client-secret-value-0042"),
            clientCredentials: true,
            revocationURL: "https://auth.example/revoke",
            deviceAuthorizationURL: "https://auth.example/device"
        )
    )

    /// Answers a client_credentials grant with a client token, a password grant with a user
    /// session, and a revocation with `revocation`.
    static func server(revocation: Int = 200) -> FakeTokenEndpoint.Respond {
        { request, index in
            if request.url.hasSuffix("/revoke") { return TokenHTTPResponse(status: revocation) }
            switch FakeTokenEndpoint.form(request)["grant_type"] {
            case "client_credentials": return FakeTokenEndpoint.tokens(access: "client-access-\(index)")
            case "password":
                return FakeTokenEndpoint.tokens(access: "user-access-\(index)", refresh: "user-refresh-\(index)")
            default: return FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
            }
        }
    }

    @Test func logoutRevokesTheRefreshTokenWipesTheUserAndKeepsTheClientToken() async throws {
        let harness = TokenHarness(source: Self.source, seed: nil, respond: Self.server())
        #expect(try await harness.manager.token().value.hasPrefix("client-access"))
        try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
        let userToken = try await harness.manager.token()
        #expect(userToken.value.hasPrefix("user-access"))
        #expect(try harness.store.load()?.client?.accessToken?.value.hasPrefix("client-access") == true)

        let result = await harness.manager.logOut()
        #expect(result == LogoutResult(loggedOut: true, revoked: true, detail: "the token server revoked the session"))
        let revocation = try #require(harness.endpoint.requests.last)
        #expect(revocation.url == "https://auth.example/revoke")
        #expect(FakeTokenEndpoint.form(revocation)["token"] == "user-refresh-1")
        #expect(FakeTokenEndpoint.form(revocation)["token_type_hint"] == "refresh_token")
        let stored = try #require(try harness.store.load())
        #expect(stored.user == nil)
        #expect(stored.client?.accessToken?.value.hasPrefix("client-access") == true)
        // The client token in hand is used again, without a new request.
        let before = harness.endpoint.requests.count
        #expect(try await harness.manager.token().value.hasPrefix("client-access"))
        #expect(harness.endpoint.requests.count == before)
        #expect(await harness.manager.logOut().loggedOut == false)
        #expect(!harness.logText.contains("user-refresh") && !harness.logText.contains("alice-pass"))
    }

    @Test(arguments: [503, 400])
    func aFailedRevocationStillLogsOutAndSaysSo(status: Int) async throws {
        let harness = TokenHarness(source: Self.source, seed: nil, respond: Self.server(revocation: status))
        try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
        let result = await harness.manager.logOut()
        #expect(result.loggedOut && !result.revoked)
        #expect(result.detail.contains("HTTP \(status)") && result.detail.contains("until it expires"))
        #expect(try harness.store.load()?.user == nil)
    }

    @Test func withoutARevocationEndpointLogoutSaysTheServerSessionStays() async throws {
        let harness = TokenHarness { _, index in FakeTokenEndpoint.tokens(access: "a-\(index)", refresh: "r-\(index)") }
        _ = try await harness.manager.token()
        let result = await harness.manager.logOut()
        #expect(result.loggedOut && !result.revoked && result.detail.contains("auth.revocation_url"))
        #expect(harness.endpoint.requests.count == 1, "nothing sent to a revocation endpoint nobody named")
        await #expect(throws: TokenUnavailableError.notLoggedIn("logged out: run `bearerd login`")) {
            try await harness.manager.token()
        }
    }

    @Test func aRejectedRefreshTokenDropsTheUserAndFallsBackToTheStoredClientToken() async throws {
        let clientExpiry = Date(timeIntervalSince1970: 1_800_000_000 + 3600)
        let stored = StoredTokens(
            user: StoredSession(refreshToken: Secret("user-refresh-old")),
            client: StoredSession(accessToken: BearerToken("client-stored"), accessExpiresAt: clientExpiry)
        )
        let harness = TokenHarness(source: Self.source, stored: stored, respond: Self.server())
        #expect(try await harness.manager.token() == BearerToken("client-stored"))
        #expect(harness.endpoint.requests.count == 1, "one refresh, rejected; the client token needed none")
        let after = try #require(try harness.store.load())
        #expect(after.user == nil && after.client?.accessToken == BearerToken("client-stored"))
    }

    /// `invalid_client` is about the client's credentials, not the user's password.
    @Test func aRefusedClientIsNotBlamedOnThePassword() async throws {
        let harness = TokenHarness(seed: nil) { _, _ in
            FakeTokenEndpoint.json(#"{"error":"invalid_client"}"#, status: 401)
        }
        do {
            try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
            Issue.record("a refused client logged in")
        } catch {
            #expect("\(error)".contains("auth.client_id, auth.client_secret_file and auth.client_auth"), "\(error)")
            #expect(!"\(error)".contains("password"), "\(error)")
        }
    }

    /// A JSON API without a logout URL says which key would revoke its sessions.
    @Test func theJSONLogoutWarningNamesItsOwnKey() async throws {
        let source = JSONSource(settings: .init(refreshURL: "https://api.example/refresh"))
        let harness = TokenHarness(source: source) { _, _ in
            FakeTokenEndpoint.json(#"{"session":{"token":"json-access-1","refreshToken":"json-refresh-2"}}"#)
        }
        _ = try await harness.manager.token()
        let result = await harness.manager.logOut()
        #expect(result.detail.contains("auth.json.logout_url") && !result.detail.contains("auth.revocation_url"))
    }

    /// A JSON sign-in answer with its refresh token elsewhere than auth.json.refresh_token says
    /// used to be accepted, and the first refresh then ended the session in silence.
    @Test func aJSONLoginWithoutTheRefreshTokenItPointsAtIsRefused() async throws {
        let source = JSONSource(
            settings: .init(loginURL: "https://api.example/login", refreshURL: "https://api.example/r")
        )
        let harness = TokenHarness(source: source, seed: nil) { _, _ in
            FakeTokenEndpoint.json(#"{"session":{"token":"json-access-1"},"auth":{"rt":"json-refresh-secret-77"}}"#)
        }
        do {
            try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
            Issue.record("a sign-in without a refresh token was accepted")
        } catch {
            let text = "\(error)"
            #expect(text.contains("/session/refreshToken") && text.contains("auth.json.refresh_token"), "\(text)")
            #expect(text.contains("/auth/rt") && text.contains("/session/token"), "the keys are listed: \(text)")
            #expect(!text.contains("json-refresh-secret-77") && !text.contains("json-access-1"), "never values")
            #expect(!text.contains("try again later"), "\(text)")
        }
        #expect(try harness.store.load()?.user == nil)
    }

    /// An API declared to issue no refresh token (auth.json.refresh_token: none) logs in, and
    /// status says when a new login will be needed.
    @Test func aSourceWithoutRefreshTokensSaysWhenToLogInAgain() async throws {
        let source = JSONSource(
            settings: .init(
                loginURL: "https://api.example/login",
                refreshURL: "https://api.example/r",
                refreshTokenPointer: nil
            )
        )
        let harness = TokenHarness(source: source, seed: nil) { _, _ in
            FakeTokenEndpoint.json(#"{"session":{"token":"json-access-1","expiresAt":1800003600}}"#)
        }
        try await harness.manager.logIn(username: "alice", password: Secret("alice-pass"))
        let status = await harness.manager.status()
        #expect(status.state == .ready && status.nextRefreshAt == nil)
        #expect(status.detail?.contains("run `bearerd login` again before 2027-01-15T09:00:00Z") == true, "\(status)")
        // Served until it expires (not dropped at the refresh margin), then a login is needed.
        harness.clock.advance(by: .seconds(3590))
        await harness.manager.timerFired()
        #expect(try await harness.manager.token() == BearerToken("json-access-1"))
        harness.clock.advance(by: .seconds(20))
        await harness.manager.timerFired()
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        #expect(await harness.manager.status().state == .loggedOut)
    }

    @Test func theSeedOnlyFillsAnEmptyStore() async throws {
        // A store that exists but holds no user session (after a logout): the seed is spent.
        let harness = TokenHarness(stored: StoredTokens(), respond: Self.server())
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        #expect(harness.endpoint.requests.isEmpty)
    }

    @Test func anImportedRefreshTokenIsExchangedAtOnceAndARefusalKeepsTheSession() async throws {
        let harness = TokenHarness(seed: nil) { request, index in
            FakeTokenEndpoint.form(request)["refresh_token"] == "good-import"
                ? FakeTokenEndpoint.tokens(access: "imported-access", refresh: "rotated-\(index)")
                : FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
        }
        try await harness.manager.logIn(refreshToken: Secret("good-import"))
        #expect(try await harness.manager.token() == BearerToken("imported-access"))
        #expect(try harness.store.load()?.user?.refreshToken == Secret("rotated-0"))
        let refused = await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(refreshToken: Secret("bad-import"))
        }
        #expect(refused?.code == .login)
        #expect(try await harness.manager.token() == BearerToken("imported-access"))
        #expect(try harness.store.load()?.user?.refreshToken == Secret("rotated-0"), "a refused import wipes nothing")
        #expect(!harness.logText.contains("good-import") && !harness.logText.contains("rotated-0"))
    }

    @Test func statusTellsTheStateAndNeverATokenOrSecret() async throws {
        let access = jwt(#"{"sub":"alice@example.com","exp":1800003600}"#)
        let harness = TokenHarness { _, _ in
            FakeTokenEndpoint.json(
                #"{"access_token":"\#(access)","token_type":"Bearer","refresh_token":"rt-secret-99","expires_in":3600,"scope":"read write"}"#
            )
        }
        var status = await harness.manager.status()
        #expect(status.state == .ready && status.session == "user" && status.expiresAt == nil)
        _ = try await harness.manager.token()
        harness.clock.advance(by: .seconds(100))
        status = await harness.manager.status()
        #expect(status.state == .ready && status.session == "user")
        #expect(status.subject == "alice@example.com" && status.scope == "read write")
        #expect(status.expiresIn == 3500)
        #expect(status.lastRefreshResult == "ok" && status.lastRefreshGrant == "refresh_token")
        #expect(harness.offset(status.nextRefreshAt).map { $0 > 3000 && $0 < 3600 } == true)
        let json = String(decoding: try TokenStatus.encoder().encode(status), as: UTF8.self)
        for secret in [access, "rt-secret-99", "seed-refresh-token-0001", "client-secret-value-0042"] {
            #expect(!json.contains(secret) && !"\(status)".contains(secret))
        }
        #expect(try TokenStatus.decoder().decode(TokenStatus.self, from: Data(json.utf8)) == status)
    }
}

@Suite("A refresh in flight when bearerd stopped", .timeLimit(.minutes(1)))
struct RefreshInFlightTests {
    @Test func theMarkIsOnDiskBeforeTheRefreshTokenLeavesAndClearedByTheAnswer() async throws {
        let seen = Mutex<StoredSession?>(nil)
        let store = MemoryTokenStore(
            StoredTokens(
                refreshToken: Secret("rt-1"),
                accessToken: BearerToken("at-1"),
                accessExpiresAt: Date(timeIntervalSince1970: 1_800_000_010)
            )
        )
        let endpoint = FakeTokenEndpoint { _, _ in
            seen.withLock { $0 = try? store.load()?.user }
            return FakeTokenEndpoint.tokens(access: "at-2", refresh: "rt-2")
        }
        let manager = TokenManager(
            source: TokenHarness.source,
            transport: endpoint,
            store: store,
            clock: ManualTokenClock(),
            logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
        )
        await manager.refresh(reason: .proactive)
        let during = try #require(seen.withLock { $0 })
        #expect(during.refreshToken == Secret("rt-1") && during.refreshSentAt != nil)
        let after = try #require(try store.load()?.user)
        #expect(after.refreshToken == Secret("rt-2") && after.refreshSentAt == nil)
    }

    @Test func aSeedWhoseFirstRefreshFailsIsKeptInTheStoreNotSpent() async throws {
        let harness = TokenHarness { _, _ in TokenHTTPResponse(status: 503) }
        await #expect(throws: TokenUnavailableError.self) { try await harness.manager.token() }
        let stored = try #require(try harness.store.load()?.user)
        #expect(stored.refreshToken == Secret("seed-refresh-token-0001") && stored.refreshSentAt != nil)
        // The next start, on that store, sends the same refresh token again.
        let again = TokenHarness(stored: try harness.store.load(), seed: nil) { _, _ in
            FakeTokenEndpoint.tokens(access: "at-1", refresh: "rt-1")
        }
        #expect(try await again.manager.token() == BearerToken("at-1"))
        #expect(FakeTokenEndpoint.form(again.endpoint.requests[0])["refresh_token"] == "seed-refresh-token-0001")
    }

    @Test func foundAtStartItRefreshesAtOnceEvenWithAValidAccessToken() async throws {
        let clock = ManualTokenClock()
        let stored = StoredSession(
            refreshToken: Secret("rt-1"),
            accessToken: BearerToken("at-1"),
            accessExpiresAt: clock.now.addingTimeInterval(3000),
            receivedAt: clock.now.addingTimeInterval(-600),
            refreshSentAt: clock.now.addingTimeInterval(-1)
        )
        let harness = TokenHarness(stored: StoredTokens(user: stored)) { _, _ in
            FakeTokenEndpoint.tokens(access: "at-2", refresh: "rt-2")
        }
        #expect(await harness.manager.status().nextRefreshAt == harness.clock.now)
        #expect(harness.logText.contains("refresh was in flight"))
        // Without the mark, the same valid token is used with no refresh at boot.
        var calm = stored
        calm.refreshSentAt = nil
        let quiet = TokenHarness(stored: StoredTokens(user: calm)) { _, _ in FakeTokenEndpoint.tokens(access: "x") }
        #expect(try await quiet.manager.token() == BearerToken("at-1"))
        #expect(quiet.endpoint.requests.isEmpty)
        #expect(
            await quiet.manager.status().nextRefreshAt.map { $0 > quiet.clock.now.addingTimeInterval(2000) } == true
        )
    }
}
