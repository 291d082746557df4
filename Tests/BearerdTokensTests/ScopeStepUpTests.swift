import BearerdAuth
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

/// A 403 `insufficient_scope` from the API: noted for `status` and the next login; for a client
/// token under `auth.scope_step_up`, the allowed scopes are asked for at once.
@Suite("More scope when the API asks for it")
struct ScopeStepUpTests {
    static let admin = ScopeChallenge(kind: .insufficientScope, scopes: ["admin"])

    /// A client-credentials engine whose token server grants what it is asked (`refuse`: answers
    /// 400 invalid_scope to a request for admin).
    static func client(
        stepUp: Bool = true,
        allowed: Set<String> = ["admin"],
        refuse: Bool = false,
        refusal: String = "invalid_scope",
        namesScope: Bool = true
    ) -> TokenHarness {
        var settings = OAuth2Source.Settings(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "svc",
            clientSecret: Secret("svc-secret"),
            clientCredentials: true
        )
        settings.client.scopes = ["read"]
        var policy = RefreshPolicy()
        policy.scopeStepUp = stepUp
        policy.scopeStepUpAllowed = allowed
        let counter = Mutex(0)
        return TokenHarness(source: OAuth2Source(settings: settings), seed: nil, policy: policy) { request, _ in
            let scope = FakeTokenEndpoint.form(request)["scope"] ?? ""
            if refuse && scope.contains("admin") {
                return FakeTokenEndpoint.json(#"{"error":"\#(refusal)"}"#, status: 400)
            }
            let number = counter.withLock { count in
                count += 1
                return count
            }
            let named = namesScope ? #","scope":"\#(scope)""# : ""
            return FakeTokenEndpoint.json(
                #"{"access_token":"client-\#(number)","token_type":"Bearer","expires_in":3600\#(named)}"#
            )
        }
    }

    static func asked(_ harness: TokenHarness) -> [String] {
        harness.endpoint.requests.map { FakeTokenEndpoint.form($0)["scope"] ?? "" }
    }

    /// Some APIs put their key in the path (`/bot<token>/getMe`): what the engine logs and
    /// `status` shows of a path is its first segment only when it cannot be a credential.
    @Test func aPathThatCarriesACredentialIsNeverLoggedOrShown() async throws {
        let harness = Self.client()
        let first = try await harness.manager.token()
        let key = "bot123456:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw"
        _ = await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/\(key)/getMe")
        _ = await harness.manager.freshTokenAnswered(first, refused: true, path: "/\(key)/getMe")
        _ = await harness.manager.freshTokenAnswered(first, refused: true, path: "/\(key)/getMe")
        let status = await harness.manager.status()
        #expect(status.apiAsks?.path == "/*")
        #expect(harness.logText.contains("\"path_prefix\": /*"), "\(harness.logText)")
        #expect(!harness.logText.contains("AAHdqT") && !"\(status)".contains("AAHdqT"))
    }

    @Test func anAllowedScopeIsAskedForAtOnceKeptAndTheRequestRetried() async throws {
        let harness = Self.client()
        let first = try await harness.manager.token()
        let retry = await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/admin/users/7")
        #expect(retry?.value == "client-2")
        #expect(Self.asked(harness) == ["read", "read admin"])
        let status = await harness.manager.status()
        #expect(status.scope == "read admin")
        #expect(status.apiAsks?.scope == "admin" && status.apiAsks?.path == "/admin")
        #expect(status.apiAsks?.action.hasPrefix("granted") == true, "\(String(describing: status.apiAsks))")
        // The next refresh of the client token keeps asking for it.
        await harness.manager.refresh(reason: .proactive)
        #expect(Self.asked(harness).last == "read admin")
        // A 403 for a scope the token has: nothing more to ask.
        let again = await harness.manager.upstreamAskedForMore(
            Self.admin,
            token: try await harness.manager.token(),
            path: "/admin"
        )
        #expect(again == nil && harness.endpoint.requests.count == 3)
    }

    /// A token server that does not say which scope it granted (RFC 6749 §5.1 lets it): one
    /// step-up, then the scope is taken as granted; a hostile API's 403s do not repeat it.
    @Test func aServerThatNamesNoScopeIsAskedOnce() async throws {
        let harness = Self.client(namesScope: false)
        let first = try await harness.manager.token()
        let stepped = await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/a")
        #expect(stepped?.value == "client-2")
        for _ in 0..<5 {
            _ = await harness.manager.upstreamAskedForMore(
                Self.admin,
                token: try await harness.manager.token(),
                path: "/a"
            )
        }
        #expect(Self.asked(harness) == ["read", "read admin"])
    }

    @Test func aScopeOutsideTheAllowListOrWithTheSwitchOffIsNeverAsked() async throws {
        for harness in [Self.client(allowed: ["write"]), Self.client(stepUp: false)] {
            let first = try await harness.manager.token()
            #expect(await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/a") == nil)
            #expect(Self.asked(harness) == ["read"], "admin never sent")
            #expect(await harness.manager.status().apiAsks?.action.hasPrefix("passed on") == true)
        }
    }

    @Test(arguments: ["invalid_scope", "access_denied", "unauthorized_client"])
    func aRefusalKeepsTheTokenAndPausesTheScope(refusal: String) async throws {
        let harness = Self.client(refuse: true, refusal: refusal)
        let first = try await harness.manager.token()
        #expect(await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/a") == nil)
        #expect(try await harness.manager.token() == first, "the token in hand serves on")
        #expect(await harness.manager.status().apiAsks?.action.contains("refused") == true)
        #expect(await harness.manager.upstreamAskedForMore(Self.admin, token: first, path: "/a") == nil)
        #expect(Self.asked(harness) == ["read", "read admin"], "not asked again at once")
        await harness.manager.refresh(reason: .proactive)
        #expect(Self.asked(harness).last == "read", "the refused scope left the client grant")
    }

    @Test func aPersonsSessionIsNotSteppedUpButTheNextLoginAsksForTheUnion() async throws {
        var settings = OAuth2Source.Settings(
            endpoint: .issuer("https://idp.example"),
            clientID: "native-app",
            clientAuthentication: .none
        )
        settings.client.scopes = ["openid"]
        settings.client.authorization.url = "https://idp.example/authorize"
        let harness = TokenHarness(source: OAuth2Source(settings: settings), seed: nil) { request, _ in
            if request.url.contains("/.well-known/") {
                return FakeTokenEndpoint.json(
                    #"{"issuer":"https://idp.example","token_endpoint":"https://idp.example/token"}"#
                )
            }
            return FakeTokenEndpoint.json(
                #"{"access_token":"user-1","refresh_token":"r1","token_type":"Bearer","expires_in":3600,"scope":"openid read"}"#
            )
        }
        let prompt = try await harness.manager.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        try await harness.manager.logIn(authorizationCode: Secret("c"), state: prompt.state, issuer: nil)
        let token = try await harness.manager.token()
        let sent = harness.endpoint.requests.count
        let stronger = ScopeChallenge(kind: .insufficientUserAuthentication, acrValues: ["mfa"], maxAge: 300)
        #expect(await harness.manager.upstreamAskedForMore(Self.admin, token: token, path: "/x") == nil)
        #expect(await harness.manager.upstreamAskedForMore(stronger, token: token, path: "/x") == nil)
        #expect(harness.endpoint.requests.count == sent, "nothing asked without the person")
        let asks = await harness.manager.status().apiAsks
        #expect(asks?.scope == "admin" && asks?.acrValues == "mfa" && asks?.maxAge == 300)
        #expect(asks?.action.contains("bearerd login") == true)
        let next = try await harness.manager.beginAuthorization(redirectURI: "http://127.0.0.1:9/callback")
        let query = URLComponents(string: next.authorizationURL)?.queryItems ?? []
        let scope = query.first { $0.name == "scope" }?.value
        #expect(scope == "openid read admin", "configured, granted and asked: \(scope ?? "-")")
        #expect(query.first { $0.name == "acr_values" }?.value == "mfa")
        #expect(query.first { $0.name == "max_age" }?.value == "300")
        // A password login shows the person no consent: it asks for what the session has only.
        let password = try await harness.manager.source.passwordRequest(
            username: "alice",
            password: Secret("p"),
            transport: harness.endpoint
        )
        #expect(FakeTokenEndpoint.form(password)["scope"] == "openid", "not what the API asked for")
    }
}
