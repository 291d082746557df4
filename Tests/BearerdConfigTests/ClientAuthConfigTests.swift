import BearerdAuth
import BearerdConfig
import BearerdFiles
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// `auth.client_auth: private_key_jwt | tls_client_auth` and the keys that go with them.
@Suite("auth.client_auth: private_key_jwt and tls_client_auth")
struct ClientAuthConfigTests {
    let directory: TemporaryDirectory
    let key: String
    let certificate: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.key = try self.directory.write("-----BEGIN PRIVATE KEY-----\n", to: "client.key", mode: 0o600)
        self.certificate = try self.directory.write("-----BEGIN CERTIFICATE-----\n", to: "client.pem", mode: 0o644)
    }

    func load(_ auth: String, tokenURL: String = "token_url: https://idp.example/token") throws -> BearerdConfiguration
    {
        let body = """
            upstream:
              url: https://api.example.com/v2
            auth:
              \(tokenURL)
              client_id: svc
            \(auth)
            """
        return try ConfigLoader(environment: [:]).load(yaml: body, source: "t.yaml", baseDirectory: self.directory.path)
    }

    func issues(_ auth: String, tokenURL: String = "token_url: https://idp.example/token") -> [ConfigIssue] {
        do {
            _ = try self.load(auth, tokenURL: tokenURL)
            return []
        } catch let error as ConfigError {
            return error.issues
        } catch {
            return [ConfigIssue(key: "-", message: "\(error)")]
        }
    }

    @Test func privateKeyJWTReadsItsKeysWithTheirDefaults() throws {
        let config = try self.load("  client_auth: private_key_jwt\n  client_key_file: client.key")
        guard case .oauth2(let oauth2) = config.auth.source else { throw TestClientError("not oauth2") }
        #expect(oauth2.clientAuthentication == .privateKeyJWT)
        #expect(oauth2.clientKeyFile == self.key)
        #expect(oauth2.clientKeyID == nil && oauth2.clientAssertionAlgorithm == nil)
        #expect(oauth2.clientAssertionAudience == "endpoint")
        #expect(oauth2.clientSecretFile == nil)
    }

    @Test func tlsClientAuthReadsTheCertificateAndKey() throws {
        let config = try self.load(
            "  client_auth: tls_client_auth\n  tls_cert_file: client.pem\n  tls_key_file: client.key"
        )
        #expect(config.auth.tlsClientCertificate?.certificateFile == self.certificate)
        #expect(config.auth.tlsClientCertificate?.keyFile == self.key)
    }

    @Test func eachMistakeNamesItsKey() throws {
        let open = try self.directory.write("k", to: "open.key", mode: 0o644)
        let cases: [(String, String, String)] = [
            ("  client_auth: private_key_jwt", "auth.client_key_file", "required"),
            ("  client_auth: private_key_jwt\n  client_key_file: \(open)", "auth.client_key_file", "chmod 600"),
            ("  client_auth: private_key_jwt\n  client_key_file: nowhere.key", "auth.client_key_file", "cannot find"),
            (
                "  client_auth: private_key_jwt\n  client_key_file: client.key\n  client_assertion_alg: HS256",
                "auth.client_assertion_alg", "RS256, PS256 or ES256"
            ),
            (
                "  client_auth: private_key_jwt\n  client_key_file: client.key\n  client_key_id: \"a b\"",
                "auth.client_key_id", "printable"
            ),
            (
                "  client_auth: private_key_jwt\n  client_key_file: client.key\n  client_assertion_audience: issuer",
                "auth.client_assertion_audience", "auth.issuer"
            ),
            (
                "  client_auth: private_key_jwt\n  client_key_file: client.key\n  client_assertion_audience: nope",
                "auth.client_assertion_audience", "endpoint, issuer or"
            ),
            ("  client_secret_file: client.key\n  client_key_file: client.key", "auth.client_key_file", "only with"),
            ("  client_auth: tls_client_auth", "auth.tls_cert_file", "required"),
            ("  client_auth: tls_client_auth\n  tls_cert_file: client.pem", "auth.tls_key_file", "required"),
            ("  tls_key_file: client.key", "auth.tls_cert_file", "required with auth.tls_key_file"),
            (
                "  client_auth: tls_client_auth\n  tls_cert_file: client.pem\n  tls_key_file: \(open)",
                "auth.tls_key_file", "chmod"
            ),
            ("  client_auth: mtls", "auth.client_auth", "private_key_jwt, tls_client_auth"),
        ]
        for (auth, key, says) in cases {
            let found = self.issues(auth)
            #expect(found.contains { $0.key == key && $0.message.contains(says) }, "\(auth): \(found)")
        }
        // With the issuer configured, the issuer is a valid audience.
        #expect(
            self.issues(
                "  client_auth: private_key_jwt\n  client_key_file: client.key\n  client_assertion_audience: issuer",
                tokenURL: "issuer: https://idp.example"
            ).isEmpty
        )
    }
}

/// `auth.verify.*`.
@Suite("auth.verify")
struct VerifyConfigTests {
    let directory: TemporaryDirectory

    init() throws { self.directory = try TemporaryDirectory() }

    func load(_ auth: String) throws -> BearerdConfiguration {
        let body = """
            upstream:
              url: https://api.example.com/v2
            auth:
            \(auth)
            """
        return try ConfigLoader(environment: [:]).load(yaml: body, source: "t.yaml", baseDirectory: self.directory.path)
    }

    @Test func theKeysAndTheirDefaults() throws {
        let discovered = try self.load(
            "  issuer: https://idp.example\n  client_id: c\n  verify:\n    jwks_uri: discover\n    audience: api://x"
        )
        #expect(discovered.auth.verify == .init(keys: .discovered, issuer: "https://idp.example", audience: "api://x"))
        let secret = try self.directory.write("s3cret", to: "hs.key", mode: 0o600)
        let hs = try self.load("  token_url: https://idp.example/t\n  client_id: c\n  verify:\n    secret_file: hs.key")
        #expect(hs.auth.verify == .init(keys: .secret(secret), issuer: nil, audience: nil))
        #expect(try self.load("  token_url: https://idp.example/t\n  client_id: c").auth.verify == nil)
    }

    @Test func eachMistakeNamesItsKey() throws {
        let token = try self.directory.write("t", to: "token", mode: 0o600)
        let cases: [(String, String, String)] = [
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    jwks_uri: discover", "auth.verify.jwks_uri",
                "needs auth.issuer"
            ),
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    jwks_uri: ftp://x", "auth.verify.jwks_uri",
                "discover or an http(s) URL"
            ),
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    jwks_uri: http://203.0.113.9/jwks",
                "auth.verify.jwks_uri", "http"
            ),
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    jwks_uri: https://i/j\n    secret_file: token",
                "auth.verify.secret_file", "not both"
            ),
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    audience: api://x", "auth.verify.audience",
                "applies with"
            ),
            ("  static_token_file: \(token)\n  verify:\n    jwks_uri: https://i/j", "auth.verify", "static token"),
            (
                "  token_url: https://i/t\n  client_id: c\n  verify:\n    secret_file: nowhere",
                "auth.verify.secret_file", "cannot find"
            ),
        ]
        for (auth, key, says) in cases {
            var found: [ConfigIssue] = []
            do { _ = try self.load(auth) } catch let error as ConfigError { found = error.issues }
            #expect(found.contains { $0.key == key && $0.message.contains(says) }, "\(auth): \(found)")
        }
    }
}
