import BearerdAuth
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdTokens

@Suite("Token sources: OAuth2 and custom JSON APIs")
struct TokenSourceTests {
    let endpoint = FakeTokenEndpoint { _, _ in TokenHTTPResponse(status: 500) }

    func oauth2(_ authentication: OAuth2Source.ClientAuthentication, secret: String? = "s3cr:t") -> OAuth2Source {
        OAuth2Source(
            settings: .init(
                endpoint: .tokenURL("https://auth.example/token"),
                clientID: "my app",
                clientSecret: secret.map(Secret.init),
                clientAuthentication: authentication,
                scopes: ["read", "write"],
                extraParameters: [("audience", "https://api.example")]
            )
        )
    }

    /// `auth.client_secret_file` is read before each request that sends it: a secret replaced
    /// in the file is sent from the next request on, without a restart (issue 50: a reload said
    /// "live" while the old secret kept being sent), and a file gone bad is a clear error under
    /// its key, not the secret read at start sent on.
    @Test func aReplacedSecretFileIsSentFromTheNextRequestOn() async throws {
        let directory = try TemporaryDirectory()
        let path = try directory.write("first-secret-0001\n", to: "client.secret", mode: 0o600)
        var settings = OAuth2Source.Settings(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: Secret("first-secret-0001"),
            clientAuthentication: .clientSecretPost
        )
        settings.clientSecretFile = SecretFile(path: path, key: "auth.client_secret_file")
        let source = OAuth2Source(settings: settings)
        let first = try await source.refreshRequest(Secret("r"), transport: self.endpoint)
        #expect(FakeTokenEndpoint.form(first)["client_secret"] == "first-secret-0001")
        _ = try directory.write("second-secret-0002\n", to: "client.secret", mode: 0o600)
        let second = try await source.refreshRequest(Secret("r"), transport: self.endpoint)
        #expect(FakeTokenEndpoint.form(second)["client_secret"] == "second-secret-0002")
        _ = try directory.write("", to: "client.secret", mode: 0o600)
        let error = await #expect(throws: TokenEngineError.self) {
            _ = try await source.refreshRequest(Secret("r"), transport: self.endpoint)
        }
        #expect(error?.code == .source && error?.message.hasPrefix("auth.client_secret_file: ") == true)
    }

    @Test func clientSecretBasicFormEncodesBothPartsIntoTheHeader() async throws {
        let request = try await self.oauth2(.clientSecretBasic).refreshRequest(Secret("r/t"), transport: self.endpoint)
        let form = FakeTokenEndpoint.form(request)
        #expect(
            form == [
                "grant_type": "refresh_token", "refresh_token": "r/t", "scope": "read write",
                "audience": "https://api.example",
            ]
        )
        let authorization = try #require(request.headers.first { $0.0 == "authorization" }?.1)
        let decoded = String(decoding: Data(base64Encoded: String(authorization.dropFirst(6)))!, as: UTF8.self)
        #expect(decoded == "my%20app:s3cr%3At")
        #expect(request.headers.contains { $0 == ("content-type", "application/x-www-form-urlencoded") })
    }

    @Test func clientSecretPostAndNoneSendTheClientInTheForm() async throws {
        let post = FakeTokenEndpoint.form(
            try await self.oauth2(.clientSecretPost).clientCredentialsRequest(transport: self.endpoint)
        )
        #expect(
            post["client_id"] == "my app" && post["client_secret"] == "s3cr:t"
                && post["grant_type"] == "client_credentials"
        )
        let none = try await self.oauth2(.none, secret: nil).passwordRequest(
            username: "alice",
            password: Secret("p&ss word"),
            transport: self.endpoint
        )
        #expect(FakeTokenEndpoint.form(none)["password"] == "p&ss word")
        #expect(FakeTokenEndpoint.form(none)["client_secret"] == nil)
        #expect(!none.headers.contains { $0.0 == "authorization" })
    }

    /// django-oauth-toolkit's shape: OIDC lists the token endpoint, only RFC 8414 lists revocation.
    @Test func everyMetadataDocumentIsReadMergedAndCached() async throws {
        let issuer = "http://127.0.0.1:9101/o"
        let discovery = FakeTokenEndpoint { request, _ in
            switch request.url {
            case issuer + "/.well-known/oauth-authorization-server":
                FakeTokenEndpoint.json(
                    #"{"issuer":"\#(issuer)","token_endpoint":"\#(issuer)/token/","revocation_endpoint":"\#(issuer)/revoke_token/"}"#
                )
            case issuer + "/.well-known/openid-configuration":
                FakeTokenEndpoint.json(#"{"issuer":"\#(issuer)/","token_endpoint":"\#(issuer)/token/"}"#)
            default: TokenHTTPResponse(status: 404)
            }
        }
        let source = OAuth2Source(settings: .init(endpoint: .issuer(issuer + "/"), clientID: "c"))
        #expect(try await source.refreshRequest(Secret("r"), transport: discovery).url == issuer + "/token/")
        let revoke = try await source.revocationRequest(
            refreshToken: Secret("r"),
            accessToken: nil,
            transport: discovery
        )
        #expect(revoke?.url == issuer + "/revoke_token/")
        let asked = discovery.requests.filter { $0.url.contains("/.well-known/") }.count
        _ = try await source.refreshRequest(Secret("r"), transport: discovery)
        #expect(discovery.requests.filter { $0.url.contains("/.well-known/") }.count == asked, "cached")
    }

    @Test(
        "metadata that would send credentials elsewhere is refused",
        arguments: [
            (
                "https://idp.example", #"{"issuer":"https://evil.example","token_endpoint":"https://evil.example/t"}"#,
                false, #"its issuer is "https://evil.example", not auth.issuer "https://idp.example""#
            ),
            (
                "https://idp.example", #"{"token_endpoint":"https://idp.example/t"}"#, false,
                #"its issuer is missing, not auth.issuer "https://idp.example""#
            ),
            (
                // The usual mix-up: the server calls itself localhost, the config 127.0.0.1.
                "http://127.0.0.1:9000",
                #"{"issuer":"http://localhost:9000","token_endpoint":"http://localhost:9000/t"}"#,
                false, #"its issuer is "http://localhost:9000", not auth.issuer "http://127.0.0.1:9000""#
            ),
            (
                "https://idp.example",
                #"{"issuer":"https://idp.example\nforged: line","token_endpoint":"https://x/t"}"#,
                false, #"its issuer is "https://idp.example?forged: line""#
            ),
            (
                "https://idp.example", #"{"issuer":"https://idp.example","token_endpoint":"http://idp.example/t"}"#,
                false, "points token_endpoint at plain http"
            ),
            (
                "http://idp.example", #"{"issuer":"http://idp.example","token_endpoint":"http://idp.example/t"}"#,
                false, "allow_insecure_http"
            ),
            (
                "https://idp.example", #"{"issuer":"https://idp.example","token_endpoint":"ftp://idp.example/t"}"#,
                false, "not an http(s) URL"
            ),
            ("https://idp.example", "404", false, "every document answered 404"),
            (
                "http://idp.example", #"{"issuer":"http://idp.example","token_endpoint":"http://idp.example/t"}"#, true,
                ""
            ),
        ]
    )
    func untrustworthyMetadataIsRefused(issuer: String, document: String, allowInsecure: Bool, message: String) async {
        let discovery = FakeTokenEndpoint { _, _ in
            document == "404" ? TokenHTTPResponse(status: 404) : FakeTokenEndpoint.json(document)
        }
        let source = OAuth2Source(
            settings: .init(endpoint: .issuer(issuer), clientID: "c", allowInsecureHTTP: allowInsecure)
        )
        do {
            _ = try await source.refreshRequest(Secret("r"), transport: discovery)
            #expect(message.isEmpty, "accepted \(document)")
        } catch {
            #expect(!message.isEmpty && "\(error)".contains(message), "\(error)")
            #expect("\(error)".contains("auth."), "names the config key: \(error)")
        }
    }

    @Test(arguments: [
        (#"{"access_token":"a","token_type":"bearer","expires_in":"3600"}"#, true),
        (#"{"access_token":"a","token_type":"BEARER"}"#, true),
        (#"{"access_token":"a"}"#, true),
        (#"{"access_token":"a","token_type":"mac"}"#, false),
        (#"{"access_token":"a b"}"#, false),
        (#"{"access_token":"a","expires_in":true}"#, false),
        (#"{"token":"a"}"#, false),
        ("[]", false),
        ("", false),
    ])
    func oauth2SuccessBodies(body: String, valid: Bool) {
        #expect(((try? OAuth2TokenResponse.parse(Array(body.utf8))) != nil) == valid)
    }

    @Test(arguments: [
        (200, "not json", "unreadable"),
        (301, "", "unavailable"),
        (400, #"{"error":"invalid_grant"}"#, "rejected invalid_grant"),
        (401, "", "rejected"),
        (403, "forbidden", "rejected"),
        // RFC 9449: a nonce asked for again, or a proof refused (a clock off), keep the session.
        (400, #"{"error":"use_dpop_nonce"}"#, "unavailable"),
        (400, #"{"error":"invalid_dpop_proof"}"#, "unavailable"),
        (408, "", "unavailable"),
        (429, "", "unavailable"),
        (500, #"{"error":"server_error"}"#, "unavailable"),
        (503, "", "unavailable"),
    ])
    func everyAnswerIsClassified(status: Int, body: String, expected: String) {
        let outcome = TokenResponseClassifier.classify(
            TokenHTTPResponse(status: status, body: Array(body.utf8)),
            now: Date(),
            parse: { try OAuth2TokenResponse.parse($0) }
        )
        switch outcome {
        case .issued: Issue.record("issued for \(status)")
        case .rejected(_, let error, _): #expect(expected == "rejected" + (error.map { " " + $0 } ?? ""))
        case .unavailable: #expect(expected == "unavailable")
        case .unreadable: #expect(expected == "unreadable")
        case .unreachable: Issue.record("no answer for \(status)")
        }
    }

    @Test func theBetterAuthContract() async throws {
        let source = JSONSource(
            settings: .init(
                loginURL: "http://127.0.0.1:3000/api/auth/sign-in-email",
                refreshURL: "http://127.0.0.1:3000/api/auth/refresh"
            )
        )
        let login = try await source.passwordRequest(
            username: "alice@example.com",
            password: Secret(#"pa"ss\word"#),
            transport: self.endpoint
        )
        #expect(login.url == "http://127.0.0.1:3000/api/auth/sign-in-email")
        let sent = try JSONSerialization.jsonObject(with: Data(login.body ?? [])) as? [String: String]
        #expect(sent == ["email": "alice@example.com", "password": #"pa"ss\word"#])
        let refresh = try await source.refreshRequest(Secret("rt-1"), transport: self.endpoint)
        #expect(String(decoding: refresh.body ?? [], as: UTF8.self) == #"{"refreshToken":"rt-1"}"#)

        let answer =
            #"{"session":{"token":"st-1","refreshToken":"rt-2","expiresAt":"2027-01-15T10:00:00.000Z"},"user":{"id":"u"}}"#
        let issued = try source.parseIssued(Array(answer.utf8))
        #expect(issued.accessToken == BearerToken("st-1") && issued.refreshToken == Secret("rt-2"))
        #expect(issued.expiresAt == ISO8601DateFormatter().date(from: "2027-01-15T10:00:00Z"))
    }

    @Test func aCustomContentTypeHeadersPointersAndEpochExpiry() async throws {
        let source = JSONSource(
            settings: .init(
                refreshURL: "https://cognito.example/",
                contentType: "application/x-amz-json-1.1",
                headers: [.init(name: "X-Amz-Target", value: "AWSCognitoIdentityProviderService.InitiateAuth")],
                refreshBody:
                    #"{"AuthFlow":"REFRESH_TOKEN_AUTH","AuthParameters":{"REFRESH_TOKEN":"{{refresh_token}}"}}"#,
                accessTokenPointer: "/AuthenticationResult/AccessToken",
                refreshTokenPointer: "/AuthenticationResult/RefreshToken",
                expiresInPointer: "/AuthenticationResult/ExpiresIn",
                expiresAtPointer: nil
            )
        )
        let request = try await source.refreshRequest(Secret("r"), transport: self.endpoint)
        #expect(request.headers.contains { $0 == ("content-type", "application/x-amz-json-1.1") })
        #expect(request.headers.contains { $0 == ("X-Amz-Target", "AWSCognitoIdentityProviderService.InitiateAuth") })
        let issued = try source.parseIssued(
            Array(#"{"AuthenticationResult":{"AccessToken":"at","ExpiresIn":3600}}"#.utf8)
        )
        #expect(issued.lifetime == .seconds(3600) && issued.refreshToken == nil)
        #expect(
            try JSONSource.date(.number(1_800_000_000_000), pointer: "/x") == Date(timeIntervalSince1970: 1_800_000_000)
        )
        #expect(try JSONSource.date(.string("1800000000"), pointer: "/x") == Date(timeIntervalSince1970: 1_800_000_000))
    }

    @Test func templateValuesAreJSONEscaped() {
        #expect(JSONEscaping.escaped("a\"b\\c\nd\u{1}é") == #"a\"b\\c\nd\u0001é"#)
        #expect(
            JSONSource.fill(#"{"p":"{{password}}"}"#, ["password": #"x","admin":true,"y":""#])
                == #"{"p":"x\",\"admin\":true,\"y\":\""}"#
        )
    }

    @Test func jsonPointers() {
        let document = JSONValue.parse(Array(#"{"a":{"b/c":[1,{"~d":"x"}]}}"#.utf8))!
        #expect(document.at(pointer: "/a/b~1c/1/~0d") == .string("x"))
        #expect(document.at(pointer: "/a/missing") == nil)
        #expect(document.at(pointer: "a") == nil)
        #expect(document.at(pointer: "") == document)
    }
}
