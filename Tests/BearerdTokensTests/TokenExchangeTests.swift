import BearerdAuth
import BearerdFiles
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

@Suite("Token exchange (RFC 8693) as the client grant")
struct TokenExchangeTests {
    typealias Exchange = TokenExchangeSettings

    static func source(_ directory: TemporaryDirectory, clock: any TokenClock, audiences: [String] = []) -> OAuth2Source
    {
        var settings = OAuth2Source.Settings(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "workload",
            clientAuthentication: .none,
            scopes: ["read"],
            clock: clock
        )
        var exchange = Exchange(subjectTokenFile: directory.path + "/subject")
        exchange.audiences = audiences
        exchange.resources = ["https://api.example/v1"]
        exchange.requestedTokenType = "urn:ietf:params:oauth:token-type:access_token"
        settings.client.tokenExchange = exchange
        return OAuth2Source(settings: settings)
    }

    /// A platform token for `sub`, expiring `expiresIn` seconds after the manual clock's start.
    static func platformToken(_ sub: String, expiresIn: Double = 600) -> String {
        jwt(#"{"sub":"\#(sub)","exp":\#(Int(1_800_000_000 + expiresIn))}"#)
    }

    @Test func theRequestCarriesTheFilesTokenAsItIsNow() async throws {
        let directory = try TemporaryDirectory()
        let clock = ManualTokenClock()
        let source = Self.source(directory, clock: clock, audiences: ["api://a", "api://b"])
        #expect(source.clientGrant == .tokenExchange)
        try directory.write(Self.platformToken("web-1") + "\n", to: "subject")
        let endpoint = FakeTokenEndpoint { _, _ in TokenHTTPResponse(status: 500) }
        let first = FakeTokenEndpoint.form(try await source.clientCredentialsRequest(transport: endpoint))
        #expect(first["grant_type"] == "urn:ietf:params:oauth:grant-type:token-exchange")
        #expect(first["subject_token"] == Self.platformToken("web-1"))
        #expect(first["subject_token_type"] == "urn:ietf:params:oauth:token-type:jwt")
        #expect(first["requested_token_type"] == "urn:ietf:params:oauth:token-type:access_token")
        #expect(first["resource"] == "https://api.example/v1" && first["scope"] == "read")
        #expect(first["client_id"] == "workload")
        let body = String(
            decoding: try await source.clientCredentialsRequest(transport: endpoint).body ?? [],
            as: UTF8.self
        )
        #expect(body.contains("audience=api%3A%2F%2Fa&audience=api%3A%2F%2Fb"), "each audience its own field: \(body)")

        let before = source.clientGrantInputs()
        try directory.write(Self.platformToken("web-2"), to: "subject")
        #expect(source.clientGrantInputs() != before, "a renewed file is noticed")
        let second = FakeTokenEndpoint.form(try await source.clientCredentialsRequest(transport: endpoint))
        #expect(second["subject_token"] == Self.platformToken("web-2"), "read again for every exchange")
    }

    @Test func anExpiredSubjectTokenIsNotSentAndTheErrorSaysWhenItExpired() async throws {
        let directory = try TemporaryDirectory()
        let clock = ManualTokenClock()
        let source = Self.source(directory, clock: clock)
        let token = Self.platformToken("web-1", expiresIn: -1)
        try directory.write(token, to: "subject")
        let endpoint = FakeTokenEndpoint { _, _ in TokenHTTPResponse(status: 500) }
        do {
            _ = try await source.clientCredentialsRequest(transport: endpoint)
            Issue.record("an expired subject token was sent")
        } catch let error as TokenEngineError {
            #expect(error.code == .source)
            #expect(error.message.contains("auth.token_exchange.subject_token_file"))
            #expect(error.message.contains("expired at 2027-01-15T07:59:59Z"), "\(error.message)")
            #expect(!error.message.contains(token))
        }
        try directory.write("", to: "subject")
        await #expect(throws: TokenEngineError.self) {
            _ = try await source.clientCredentialsRequest(transport: endpoint)
        }
    }

    @Test func theAnswerMustBeAnAccessTokenAndItsRefreshTokenIsNotKept() throws {
        let directory = try TemporaryDirectory()
        let source = Self.source(directory, clock: ManualTokenClock())
        let base = #""access_token":"exchanged-0001","token_type":"Bearer","expires_in":300"#
        let issued = try source.parseClientGrant(
            Array(
                #"{\#(base),"issued_token_type":"urn:ietf:params:oauth:token-type:access_token","refresh_token":"r-1"}"#
                    .utf8
            )
        )
        #expect(issued.accessToken.value == "exchanged-0001" && issued.refreshToken == nil)
        #expect(throws: TokenEngineError.self) {
            _ = try source.parseClientGrant(
                Array(#"{\#(base),"issued_token_type":"urn:ietf:params:oauth:token-type:id_token"}"#.utf8)
            )
        }
        #expect(throws: TokenEngineError.self) {
            _ = try source.parseClientGrant(
                Array(
                    #"{"access_token":"x","token_type":"N_A","issued_token_type":"urn:ietf:params:oauth:token-type:jwt"}"#
                        .utf8
                )
            )
        }
        // A refresh grant of the same source keeps its refresh token.
        #expect(try source.parseIssued(Array(#"{\#(base),"refresh_token":"r-1"}"#.utf8)).refreshToken != nil)
    }

    @Test func aRefusedSubjectKeepsTheTokenServingAndARenewedFileIsTriedAtOnce() async throws {
        let directory = try TemporaryDirectory()
        try directory.write(Self.platformToken("web-1"), to: "subject")
        let refuse = Mutex(false)
        let clock = ManualTokenClock()
        let source = Self.source(directory, clock: clock)
        let harness = TokenHarness(source: source, seed: nil, random: 1) { request, index in
            if refuse.withLock({ $0 }) {
                return FakeTokenEndpoint.json(#"{"error":"invalid_request"}"#, status: 400)
            }
            let sub = JWTClaims.subject(of: FakeTokenEndpoint.form(request)["subject_token"] ?? "") ?? "?"
            return FakeTokenEndpoint.tokens(access: "exchanged-\(sub)-\(index)", expiresIn: 600)
        }
        // The harness's own clock is the engine's; the source reads expiry on its own.
        let first = try await harness.manager.token()
        #expect(first.value.hasPrefix("exchanged-web-1"))

        refuse.withLock { $0 = true }
        harness.clock.advance(by: .seconds(560))
        clock.advance(by: .seconds(560))
        await harness.manager.timerFired()
        var status = await harness.manager.status()
        #expect(status.state == .waiting)
        #expect(status.detail?.contains("refused the token exchange (invalid_request)") == true, "\(status)")
        #expect(status.detail?.contains("subject_token_file") == true)
        #expect(harness.manager.currentToken() == first, "the exchanged token serves until it expires")
        #expect(status.clientGrant?.subjectTokenSubject == "web-1")

        // Refused again and again, the backoff grows; the file is looked at meanwhile.
        for _ in 0..<5 {
            guard let retryAt = await harness.manager.status().nextRefreshAt else { break }
            harness.clock.advance(to: retryAt)
            clock.advance(to: retryAt)
            await harness.manager.timerFired()
        }
        status = await harness.manager.status()
        let backoff = (status.nextRefreshAt ?? .distantPast).timeIntervalSince(harness.clock.now)
        #expect(backoff > 10, "\(backoff)")
        #expect(harness.endpoint.requests.count == 7, "an unchanged file is not sent again before the backoff")

        // The platform renews the file: tried at the next look, long before the backoff.
        refuse.withLock { $0 = false }
        try directory.write(Self.platformToken("web-2", expiresIn: 7200), to: "subject")
        let (due, _) = await harness.manager.schedule()
        #expect(due.map { $0.timeIntervalSince(harness.clock.now) } ?? 99 <= RefreshStateMachine.platformPollInterval)
        harness.clock.advance(by: .seconds(2))
        clock.advance(by: .seconds(2))
        await harness.manager.timerFired()
        status = await harness.manager.status()
        #expect(status.state == .ready, "\(status)")
        #expect(harness.manager.currentToken()?.value.hasPrefix("exchanged-web-2") == true)
        #expect(harness.logText.contains("the platform renewed its token"))
        #expect(!harness.logText.contains("eyJ"), "no platform token in the log")
    }

    /// Kubernetes mounts a projected token as a link in a directory of mode 1777:
    /// `token -> ..data/token`, `..data -> ..2026_11_26_10_00_00.123`. The links are the
    /// directory owner's, whom no one else can replace them for, so they are followed; a link
    /// someone else made there is not.
    @Test func aProjectedTokensLinksAreFollowedAndAStrangersAreNot() throws {
        let directory = try TemporaryDirectory()
        let mount = directory.path + "/tokens"
        try FileManager.default.createDirectory(
            atPath: mount + "/..2026_11_26_10_00_00.123",
            withIntermediateDirectories: true
        )
        chmod(mount, 0o1777)
        try directory.write(Self.platformToken("web-1"), to: "tokens/..2026_11_26_10_00_00.123/token", mode: 0o640)
        symlink("..2026_11_26_10_00_00.123", mount + "/..data")
        symlink("..data/token", mount + "/token")
        let file = PlatformTokenFile(path: mount + "/token", key: "auth.token_exchange.subject_token_file")
        #expect(try file.read(now: Date(timeIntervalSince1970: 1_800_000_000)).subject == "web-1")
        #expect(file.fingerprint() != nil)

        guard getuid() == 0 else { return }
        symlink("..data/token", mount + "/planted")
        lchown(mount + "/planted", 4242, 4242)
        let planted = PlatformTokenFile(path: mount + "/planted", key: "auth.token_exchange.subject_token_file")
        #expect(throws: TokenEngineError.self) { _ = try planted.read(now: Date(timeIntervalSince1970: 1_800_000_000)) }
        #expect(planted.fingerprint() == nil)
    }

    /// While the kubelet swaps `..data` (or after someone removed it), another user may plant a
    /// link or a folder at that name in the 1777 directory: every name on the way from the first
    /// link is checked, so the planted one is refused, whichever it is. Needs root, to plant as
    /// another uid.
    @Test(.enabled(if: getuid() == 0), arguments: [true, false])
    func aLinkOrFolderAnotherUserPlantedOnTheWayIsRefused(plantLink: Bool) throws {
        let directory = try TemporaryDirectory()
        let mount = directory.path + "/tokens"
        try FileManager.default.createDirectory(atPath: mount, withIntermediateDirectories: true)
        chmod(mount, 0o1777)
        symlink("..data/token", mount + "/token")
        // The stranger's own folder, with a token of its choosing in it.
        let elsewhere = directory.path + "/elsewhere"
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        try directory.write(Self.platformToken("mallory"), to: "elsewhere/token", mode: 0o600)
        chown(elsewhere, 4242, 4242)
        chown(elsewhere + "/token", 4242, 4242)
        if plantLink {
            symlink(elsewhere, mount + "/..data")
            lchown(mount + "/..data", 4242, 4242)
        } else {
            try FileManager.default.createDirectory(atPath: mount + "/..data", withIntermediateDirectories: false)
            try directory.write(Self.platformToken("mallory"), to: "tokens/..data/token", mode: 0o600)
            chown(mount + "/..data", 4242, 4242)
            chown(mount + "/..data/token", 4242, 4242)
        }
        let file = PlatformTokenFile(path: mount + "/token", key: "auth.token_exchange.subject_token_file")
        #expect(throws: TokenEngineError.self, "the planted \(plantLink ? "link" : "folder") was followed") {
            _ = try file.read(now: Date(timeIntervalSince1970: 1_800_000_000))
        }
        #expect(file.fingerprint() == nil)
    }

    /// A token file writable by its group passes neither check-config nor the engine: one rule.
    @Test func theRuntimeModeRuleIsCheckConfigs() throws {
        let directory = try TemporaryDirectory()
        for mode: mode_t in [0o600, 0o640, 0o440, 0o660, 0o644, 0o604, 0o650] {
            let path = try directory.write(
                Self.platformToken("web-1"),
                to: "token-\(String(mode, radix: 8))",
                mode: Int(mode)
            )
            let file = PlatformTokenFile(path: path, key: "auth.token_exchange.subject_token_file")
            let engine = (try? file.read(now: Date(timeIntervalSince1970: 1_800_000_000))) != nil
            let checkConfig = SecretFileCheck.problem(path: path, groupMayRead: true) == nil
            #expect(
                engine == checkConfig,
                "mode 0\(String(mode, radix: 8)): engine \(engine), check-config \(checkConfig)"
            )
        }
    }

    @Test func aRefusalOfTheClientIsNotKeptOutAndAnExpOfNoTimeIsNone() async throws {
        let directory = try TemporaryDirectory()
        try directory.write(Self.platformToken("web-1"), to: "subject")
        let refuse = Flag()
        let source = Self.source(directory, clock: ManualTokenClock())
        let harness = TokenHarness(source: source, seed: nil, random: 1) { _, index in
            if refuse.isOn { return FakeTokenEndpoint.json(#"{"error":"invalid_client"}"#, status: 401) }
            return FakeTokenEndpoint.tokens(access: "exchanged-\(index)", expiresIn: 600)
        }
        _ = try await harness.manager.token()
        refuse.set(true)
        harness.clock.advance(by: .seconds(560))
        await harness.manager.timerFired()
        #expect(harness.manager.currentToken() == nil, "a client the server cut off does not keep its token")
        let status = await harness.manager.status()
        #expect(status.detail?.contains("check auth.client_id") == true, "\(status)")

        #expect(PlatformToken(value: Secret(jwt(#"{"sub":"a","exp":1e19}"#))).expiresAt == nil)
    }
}
