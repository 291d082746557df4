import BearerdAuth
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

/// What `private_key_jwt` and `tls_client_auth` put in a token request.
@Suite("OAuth2 client authentication: assertions and certificates")
struct ClientAuthenticationTests {
    /// Records what it was asked to sign.
    final class RecordingSigner: ClientAssertionSigner {
        let audiences = Mutex<[String]>([])
        func assertion(clientID: String, audience: String) async throws -> Secret {
            self.audiences.withLock { $0.append(audience) }
            return Secret("signed-for-\(clientID)")
        }
    }

    let endpoint = FakeTokenEndpoint { _, _ in TokenHTTPResponse(status: 500) }

    @Test func privateKeyJWTSendsAnAssertionAndNoSecret() async throws {
        let signer = RecordingSigner()
        let source = OAuth2Source(
            settings: .init(
                endpoint: .tokenURL("https://idp.example/oauth2/token"),
                clientID: "svc",
                clientAuthentication: .privateKeyJWT,
                revocationURL: "https://idp.example/oauth2/revoke",
                assertionSigner: signer
            )
        )
        let refresh = try await source.refreshRequest(Secret("r1"), transport: self.endpoint)
        let form = FakeTokenEndpoint.form(refresh)
        #expect(form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
        #expect(form["client_assertion"] == "signed-for-svc")
        #expect(form["client_id"] == "svc" && form["client_secret"] == nil)
        #expect(!refresh.headers.contains { $0.0 == "authorization" })
        let revoke = try await source.revocationRequest(
            refreshToken: Secret("r1"),
            accessToken: nil,
            transport: self.endpoint
        )
        #expect(revoke.map(FakeTokenEndpoint.form)?["client_assertion"] == "signed-for-svc")
        // The audience is the endpoint each request goes to, unless configured otherwise.
        #expect(
            signer.audiences.withLock { $0 } == [
                "https://idp.example/oauth2/token", "https://idp.example/oauth2/revoke",
            ]
        )
    }

    @Test(arguments: [
        (ClientAssertionAudience.issuer, "https://idp.example/realms/x"),
        (.fixed("https://login.example/"), "https://login.example/"),
    ])
    func theAudienceCanBeTheIssuerOrAFixedValue(audience: ClientAssertionAudience, expected: String) async throws {
        let signer = RecordingSigner()
        let issuer = "https://idp.example/realms/x"
        let transport = FakeTokenEndpoint { request, _ in
            guard request.url.hasSuffix("openid-configuration") else { return TokenHTTPResponse(status: 404) }
            return TokenHTTPResponse(
                status: 200,
                body: Array(#"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token"}"#.utf8)
            )
        }
        let source = OAuth2Source(
            settings: .init(
                endpoint: .issuer(issuer),
                clientID: "svc",
                clientAuthentication: .privateKeyJWT,
                assertionSigner: signer,
                assertionAudience: audience
            )
        )
        _ = try await source.clientCredentialsRequest(transport: transport)
        #expect(signer.audiences.withLock { $0 } == [expected])
    }

    @Test func tlsClientAuthNamesTheClientAndLeavesProofToTheCertificate() async throws {
        let source = OAuth2Source(
            settings: .init(
                endpoint: .tokenURL("https://idp.example/token"),
                clientID: "svc",
                clientAuthentication: .tlsClientAuth
            )
        )
        let request = try await source.clientCredentialsRequest(transport: self.endpoint)
        #expect(FakeTokenEndpoint.form(request) == ["grant_type": "client_credentials", "client_id": "svc"])
        #expect(!request.headers.contains { $0.0 == "authorization" })
    }
}
