import BearerdAuth
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdTokens

/// The daemon's half of the browser login: it keeps the PKCE verifier, hands out the URL, and
/// redeems a code once, for the state it began, from the issuer it expects.
@Suite("Browser login: the authorization code with PKCE")
struct AuthorizationCodeTests {
    static let issuer = "https://idp.example"

    /// An issuer whose metadata lists an authorization endpoint, and a token endpoint that
    /// issues tokens for any code.
    static func harness(metadata: String? = nil) -> TokenHarness {
        let document =
            metadata
            ?? #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token","authorization_endpoint":"\#(issuer)/authorize","authorization_response_iss_parameter_supported":true,"code_challenge_methods_supported":["S256"]}"#
        var client = OAuth2Source.Settings(
            endpoint: .issuer(issuer),
            clientID: "native-app",
            clientAuthentication: .none
        )
        client.client.scopes = ["read", "write"]
        client.client.authorization.resources = ["https://api.example/"]
        client.client.authorization.parameters = [.init(name: "prompt", value: "consent")]
        return TokenHarness(source: OAuth2Source(settings: client), seed: nil) { request, _ in
            if request.url.contains("/.well-known/") {
                return request.url.hasSuffix("/oauth-authorization-server")
                    ? FakeTokenEndpoint.json(document) : TokenHTTPResponse(status: 404)
            }
            return FakeTokenEndpoint.tokens(access: "access-from-code", refresh: "refresh-from-code")
        }
    }

    static func query(_ url: String) -> [String: String] {
        var fields: [String: String] = [:]
        for item in URLComponents(string: url)?.queryItems ?? [] { fields[item.name] = item.value ?? "" }
        return fields
    }

    @Test func theChallengeIsRFC7636sS256() {
        // RFC 7636 Appendix B.
        #expect(
            PKCE.challenge(Secret("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"))
                == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        )
        let verifier = PKCE.randomText()
        #expect(verifier.count == 43 && verifier != PKCE.randomText())
        #expect(verifier.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" })
    }

    @Test(
        "only a loopback /callback is a redirect the daemon begins a login for",
        arguments: [
            ("http://127.0.0.1:8400/callback", true), ("http://[::1]:1/callback", true),
            ("http://localhost:8400/callback", false), ("https://127.0.0.1:8400/callback", false),
            ("http://127.0.0.1:8400/callback?x=1", false), ("http://127.0.0.1:0/callback", false),
            ("http://127.0.0.1:99999/callback", false), ("http://evil@127.0.0.1:80/callback", false),
            ("http://127.0.0.1:80/other", false), ("http://127.0.0.1.evil.example:80/callback", false),
        ]
    )
    func loopbackRedirects(uri: String, allowed: Bool) {
        #expect(PKCE.isLoopbackRedirect(uri) == allowed)
    }

    @Test func theCodeIsRedeemedWithTheVerifierOfItsChallengeOnce() async throws {
        let harness = Self.harness()
        let redirect = "http://127.0.0.1:8400/callback"
        let prompt = try await harness.manager.beginAuthorization(redirectURI: redirect)
        let asked = Self.query(prompt.authorizationURL)
        #expect(prompt.authorizationURL.hasPrefix(Self.issuer + "/authorize?"))
        #expect(asked["response_type"] == "code" && asked["client_id"] == "native-app")
        #expect(asked["redirect_uri"] == redirect && asked["state"] == prompt.state)
        #expect(asked["code_challenge_method"] == "S256" && asked["scope"] == "read write")
        #expect(asked["resource"] == "https://api.example/" && asked["prompt"] == "consent")
        #expect(!prompt.authorizationURL.contains("verifier"))

        try await harness.manager.logIn(authorizationCode: Secret("the-code"), state: prompt.state, issuer: Self.issuer)
        let redeemed = try #require(harness.endpoint.requests.last)
        let form = FakeTokenEndpoint.form(redeemed)
        #expect(form["grant_type"] == "authorization_code" && form["code"] == "the-code")
        #expect(form["redirect_uri"] == redirect && form["client_id"] == "native-app")
        #expect(form["resource"] == "https://api.example/")
        #expect(PKCE.challenge(Secret(try #require(form["code_verifier"]))) == asked["code_challenge"])
        #expect(try await harness.manager.token().value == "access-from-code")
        #expect((try harness.store.load())?.user?.refreshToken?.value == "refresh-from-code")

        // The same redirect again: the login is over.
        let sent = harness.endpoint.requests.count
        await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(
                authorizationCode: Secret("the-code"),
                state: prompt.state,
                issuer: Self.issuer
            )
        }
        #expect(harness.endpoint.requests.count == sent, "nothing sent for a second redirect")
    }

    @Test func aWrongStateAnotherIssuerOrAMissingPromisedIssStoresNothing() async throws {
        let harness = Self.harness()
        let redirect = "http://127.0.0.1:8400/callback"
        var problems: [String] = []
        for (state, issuer) in [
            ("not-a-state-this-engine-made", Self.issuer), ("", Self.issuer), (nil, "https://evil.example"),
            (nil, nil),
        ] as [(String?, String?)] {
            let prompt = try await harness.manager.beginAuthorization(redirectURI: redirect)
            do {
                try await harness.manager.logIn(
                    authorizationCode: Secret("the-code"),
                    state: state ?? prompt.state,
                    issuer: issuer
                )
                problems.append("accepted state \(state ?? "(its own)") from \(issuer ?? "(no iss)")")
            } catch {
                #expect(error.message.contains("nothing was stored") || error.message.contains("unknown or over"))
            }
        }
        #expect(problems.isEmpty, "\(problems)")
        #expect(
            !harness.endpoint.requests.contains { FakeTokenEndpoint.form($0)["grant_type"] == "authorization_code" }
        )
        #expect((try harness.store.load())?.user == nil)
    }

    /// A code the server will not redeem for this client (issued to another, or expired): the
    /// refusal is said, and nothing is stored.
    @Test func aCodeTheServerRefusesStoresNothing() async throws {
        let harness = Self.harness()
        harness.endpoint.answer { request, _ in
            if request.url.contains("/.well-known/oauth-authorization-server") {
                return FakeTokenEndpoint.json(
                    #"{"issuer":"\#(Self.issuer)","token_endpoint":"\#(Self.issuer)/token","authorization_endpoint":"\#(Self.issuer)/authorize"}"#
                )
            }
            if request.url.contains("/.well-known/") { return TokenHTTPResponse(status: 404) }
            return FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
        }
        let prompt = try await harness.manager.beginAuthorization(redirectURI: "http://127.0.0.1:8400/callback")
        do {
            try await harness.manager.logIn(
                authorizationCode: Secret("someone-elses"),
                state: prompt.state,
                issuer: nil
            )
            Issue.record("a refused code logged in")
        } catch {
            #expect(error.message.contains("the authorization code (invalid_grant)"), "\(error.message)")
            #expect(!error.message.contains("someone-elses"))
        }
        #expect((try harness.store.load())?.user == nil)
    }

    @Test func aLoginPastItsTimeIsOverAndTheOldestOfManyGoesFirst() async throws {
        let harness = Self.harness()
        let redirect = "http://127.0.0.1:8400/callback"
        let late = try await harness.manager.beginAuthorization(redirectURI: redirect)
        harness.clock.advance(by: .seconds(301 + 30))
        await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(authorizationCode: Secret("c"), state: late.state, issuer: Self.issuer)
        }
        var prompts: [AuthorizationPrompt] = []
        for _ in 0..<(PendingAuthorizations.limit + 1) {
            prompts.append(try await harness.manager.beginAuthorization(redirectURI: redirect))
        }
        await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(
                authorizationCode: Secret("c"),
                state: prompts[0].state,
                issuer: Self.issuer
            )
        }
        try await harness.manager.logIn(authorizationCode: Secret("c"), state: prompts[1].state, issuer: Self.issuer)
    }

    @Test func aServerWithoutS256OrWithoutAnEndpointIsNamed() async throws {
        let plainOnly = Self.harness(
            metadata:
                #"{"issuer":"\#(Self.issuer)","token_endpoint":"\#(Self.issuer)/token","authorization_endpoint":"\#(Self.issuer)/a","code_challenge_methods_supported":["plain"]}"#
        )
        await #expect(throws: TokenEngineError.self) {
            _ = try await plainOnly.manager.beginAuthorization(redirectURI: "http://127.0.0.1:8400/callback")
        }
        let none = Self.harness(metadata: #"{"issuer":"\#(Self.issuer)","token_endpoint":"\#(Self.issuer)/token"}"#)
        do {
            _ = try await none.manager.beginAuthorization(redirectURI: "http://127.0.0.1:8400/callback")
            Issue.record("began a login without an authorization endpoint")
        } catch {
            #expect(error.message.contains("auth.authorization_url"))
            #expect((error.underlying as? TokenEngineError)?.code == .source)
        }
    }
}
