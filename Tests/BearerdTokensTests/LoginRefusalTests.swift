import BearerdAuth
import BearerdTestSupport
import Testing

@testable import BearerdTokens

/// A refused login names what to check: the user's credentials only on `invalid_grant`; on any
/// other refusal (a bare 403, `access_denied`) also the keys of the client authentication in use.
@Suite("Refused logins")
struct LoginRefusalTests {
    /// Signs nothing: the assertion is a marker that must never show in a message.
    struct FixedSigner: ClientAssertionSigner {
        func assertion(clientID: String, audience: String) async throws -> Secret {
            Secret("assertion-secret-5521")
        }
    }

    static let secrets = ["client-secret-value-0042", "assertion-secret-5521", "alice-pass-7731", "imported-rt-8812"]

    static func source(_ authentication: ClientAuthentication, keyID: String?) -> OAuth2Source {
        var settings = OAuth2Source.Settings(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: authentication.sendsSecret ? Secret("client-secret-value-0042") : nil,
            clientAuthentication: authentication,
            assertionSigner: authentication == .privateKeyJWT ? FixedSigner() : nil
        )
        settings.client.clientKeyID = keyID
        return OAuth2Source(settings: settings)
    }

    @Test(
        arguments: [
            (
                ClientAuthentication.clientSecretBasic, nil,
                ["auth.client_id", "auth.client_secret_file", "auth.client_auth"]
            ),
            (.clientSecretPost, nil, ["auth.client_id", "auth.client_secret_file", "auth.client_auth"]),
            (
                .privateKeyJWT, "key-1",
                ["auth.client_auth (private_key_jwt)", "auth.client_key_file", "auth.client_key_id"]
            ),
            (.privateKeyJWT, nil, ["auth.client_auth (private_key_jwt)", "auth.client_key_file"]),
            (.tlsClientAuth, nil, ["auth.client_auth (tls_client_auth)", "auth.tls_cert_file", "auth.tls_key_file"]),
            (.none, nil, ["auth.client_id", "auth.client_auth"]),
        ] as [(ClientAuthentication, String?, [String])]
    )
    func aForbiddenLoginNamesTheClientAuthenticationKeys(
        authentication: ClientAuthentication,
        keyID: String?,
        keys: [String]
    ) async throws {
        for body in ["", #"{"error":"access_denied"}"#] {
            let harness = TokenHarness(source: Self.source(authentication, keyID: keyID), seed: nil) { _, _ in
                FakeTokenEndpoint.json(body, status: 403)
            }
            let password = await #expect(throws: TokenEngineError.self) {
                try await harness.manager.logIn(username: "alice", password: Secret("alice-pass-7731"))
            }
            let imported = await #expect(throws: TokenEngineError.self) {
                try await harness.manager.logIn(refreshToken: Secret("imported-rt-8812"))
            }
            for message in [password?.message ?? "", imported?.message ?? ""] {
                for key in keys { #expect(message.contains(key), "\(message)") }
                if keyID == nil { #expect(!message.contains("auth.client_key_id"), "\(message)") }
                for secret in Self.secrets { #expect(!message.contains(secret), "\(message)") }
            }
            #expect(password?.message.contains(body.isEmpty ? "(HTTP 403)" : "(access_denied)") == true)
            #expect(password?.message.contains("user name and password") == true, "the password may be wrong too")
        }
    }

    /// Each RFC 6749 §5.2 code points at the keys it is about, with the server's own words
    /// beside (issue 50: a server that answered invalid_scope was told to check the client's
    /// secret, then the user's password).
    @Test(
        arguments: [
            (
                400, #"{"error":"invalid_scope","error_description":"scope 'admin' is not allowed"}"#,
                ["auth.scopes", #"the token server says: "scope 'admin' is not allowed""#],
                ["user name", "auth.client_secret_file"]
            ),
            (400, #"{"error":"invalid_client"}"#, ["this client's authentication", "auth.client_id"], ["user name"]),
            (401, "", ["this client's authentication (HTTP 401)", "auth.client_id"], ["user name"]),
            (
                400, #"{"error":"unauthorized_client"}"#, ["the password grant", "allow it for auth.client_id"],
                ["user name"]
            ),
            (
                400, #"{"error":"unsupported_grant_type"}"#, ["the password grant (unsupported_grant_type)"],
                ["user name"]
            ),
            (
                400,
                #"{"error":"invalid_grant","error_description":"Invalid credentials for token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl\n"}"#,
                ["check the user name and password", #"the token server says: "Invalid credentials for token …?""#],
                ["eyJhbGci", "auth.client_id"]
            ),
        ] as [(Int, String, [String], [String])]
    )
    func eachCodePointsAtItsKeys(status: Int, body: String, named: [String], notNamed: [String]) async throws {
        let harness = TokenHarness(source: Self.source(.clientSecretBasic, keyID: nil), seed: nil) { _, _ in
            FakeTokenEndpoint.json(body, status: status)
        }
        let refused = await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(username: "alice", password: Secret("alice-pass-7731"))
        }
        let message = refused?.message ?? ""
        for text in named { #expect(message.contains(text), "\(message)") }
        for text in notNamed { #expect(!message.contains(text), "\(message)") }
        for secret in Self.secrets { #expect(!message.contains(secret), "\(message)") }
    }

    /// `invalid_grant` is about the user's grant: the client's keys are not blamed.
    @Test func anInvalidGrantBlamesTheUserAlone() async throws {
        let harness = TokenHarness(source: Self.source(.privateKeyJWT, keyID: "key-1"), seed: nil) { _, _ in
            FakeTokenEndpoint.json(#"{"error":"invalid_grant"}"#, status: 400)
        }
        let refused = await #expect(throws: TokenEngineError.self) {
            try await harness.manager.logIn(username: "alice", password: Secret("alice-pass-7731"))
        }
        #expect(
            refused?.message == "the token server refused the login (invalid_grant): check the user name and password"
        )
    }
}
