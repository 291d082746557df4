import BearerdAuth
import BearerdConfig
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@Suite("Config: token sources")
struct AuthConfigTests {
    let directory: TemporaryDirectory
    let secretFile: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.secretFile = try self.directory.write("s3cret\n", to: "secret")
    }

    /// A config whose `auth:` section is `lines` (indented for you).
    func load(auth lines: String) throws(ConfigError) -> BearerdConfiguration {
        let body = lines.replacingOccurrences(of: "SECRET", with: self.secretFile)
            .split(separator: "\n", omittingEmptySubsequences: false).map { "  " + $0 }.joined(separator: "\n")
        return try ConfigLoader(environment: [:]).load(
            yaml: "upstream:\n  url: https://api.example.com\nauth:\n\(body)\n",
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
    }

    @Test func anOAuth2SourceWithItsDefaults() throws {
        let config = try self.load(
            auth: """
                token_url: https://auth.example/o/token/
                client_id: pw-client
                client_secret_file: SECRET
                scopes: [read, write]
                extra_params: ["audience=https://api.example.com"]
                refresh_token_file: SECRET
                """
        )
        guard case .oauth2(let oauth2) = config.auth.source else {
            Issue.record("not oauth2: \(config.auth.source)")
            return
        }
        #expect(oauth2.tokenURL == "https://auth.example/o/token/" && oauth2.clientID == "pw-client")
        #expect(oauth2.clientAuthentication == .clientSecretBasic, "a secret means basic by default")
        #expect(oauth2.scopes == ["read", "write"])
        #expect(oauth2.extraParameters == [.init(name: "audience", value: "https://api.example.com")])
        #expect(!oauth2.clientCredentials)
        #expect(config.auth.refreshTokenFile == self.secretFile)
        #expect(config.auth.leeway == .seconds(30) && config.auth.refreshMargin == .seconds(60))
        #expect(config.auth.defaultLifetime == .seconds(3600) && config.auth.maxRefreshesPerMinute == 30)
        #expect(config.auth.requestTimeout == .seconds(10))
        #expect(config.store.path == "/var/lib/bearerd/tokens.store" && !config.store.isEncryptedOnDisk)
        #expect(config.store.profile == "default")
    }

    @Test func aJSONSourceWithItsDefaults() throws {
        let config = try self.load(
            auth: """
                json:
                  login_url: https://app.example/api/auth/sign-in-email
                  refresh_url: https://app.example/api/auth/refresh
                  headers: ["X-Amz-Target: Service.Op"]
                  expires_at: "-"
                  expires_in: /session/expiresIn
                """
        )
        guard case .json(let json) = config.auth.source else {
            Issue.record("not json: \(config.auth.source)")
            return
        }
        #expect(json.accessTokenPointer == "/session/token" && json.refreshTokenPointer == "/session/refreshToken")
        #expect(json.expiresAtPointer == nil && json.expiresInPointer == "/session/expiresIn")
        #expect(json.headers == [.init(name: "X-Amz-Target", value: "Service.Op")])
        #expect(json.contentType == "application/json")
    }

    @Test(arguments: [
        ("token_url: ftp://x\nclient_id: a", "auth.token_url", "http or https URL"),
        ("token_url: https://a/t\nissuer: https://a\nclient_id: a", "auth.issuer", "not both"),
        ("token_url: https://a/t", "auth.client_id", "required"),
        ("token_url: https://a/t\nclient_id: a\nclient_auth: jwt", "auth.client_auth", "client_secret_basic"),
        (
            "token_url: https://a/t\nclient_id: a\nclient_auth: client_secret_post", "auth.client_secret_file",
            "required with"
        ),
        (
            "token_url: https://a/t\nclient_id: a\nclient_secret_file: /nonexistent", "auth.client_secret_file",
            "cannot find"
        ),
        ("token_url: https://a/t\nclient_id: a\nextra_params: [audience]", "auth.extra_params", "must look like"),
        ("token_url: https://a/t\nclient_id: a\nclient_credentials: maybe", "auth.client_credentials", "true or false"),
        (
            "token_url: https://a/t\nclient_id: a\nrefresh_token_file: /nonexistent", "auth.refresh_token_file",
            "cannot find"
        ),
        ("token_url: https://a/t\nclient_id: a\nca_file: /nonexistent.pem", "auth.ca_file", "cannot read"),
        ("token_url: https://a/t\nclient_id: a\nrequest_timeout: 0s", "auth.request_timeout", "from "),
        ("token_url: https://a/t\nclient_id: a\nrequest_timeout: 1e18s", "auth.request_timeout", "at most 5m"),
        ("token_url: http://idp.example/t\nclient_id: a", "auth.token_url", "allow_insecure_http"),
        (
            "token_url: https://a/t\nclient_id: a\nclient_secret: s3cret", "auth.client_secret",
            "auth.client_secret_file"
        ),
        ("issuer: http://10.0.0.5/realms/x\nclient_id: a", "auth.issuer", "plain http to 10.0.0.5"),
        ("token_url: https://a/t\nclient_id: a\ndefault_lifetime: 800h", "auth.default_lifetime", "to 720h"),
        ("token_url: https://a/t\nclient_id: a\nleeway: soon", "auth.leeway", "a duration"),
        ("token_url: https://a/t\nclient_id: a\nrefresh_margin: 0s", "auth.refresh_margin", "from "),
        ("token_url: https://a/t\nclient_id: a\ndefault_lifetime: 0s", "auth.default_lifetime", "from "),
        (
            "token_url: https://a/t\nclient_id: a\nmax_refreshes_per_minute: 0", "auth.max_refreshes_per_minute",
            "at least 1"
        ),
        ("token_url: https://a/t\nclient_id: a\nstatic_token_file: SECRET", "auth", "more than one token source"),
        ("static_token_file: SECRET\nrefresh_token_file: SECRET", "auth.refresh_token_file", "does not apply"),
        ("json:\n  refresh_url: nope", "auth.json.refresh_url", "http or https URL"),
        ("json:\n  refresh_url: https://a/r\n  login_url: x", "auth.json.login_url", "http or https URL"),
        ("json:\n  refresh_url: https://a/r\n  refresh_body: '{}'", "auth.json.refresh_body", "{{refresh_token}}"),
        ("json:\n  refresh_url: https://a/r\n  login_body: '{}'", "auth.json.login_body", "{{password}}"),
        ("json:\n  refresh_url: https://a/r\n  access_token: session.token", "auth.json.access_token", "JSON pointer"),
        ("json:\n  refresh_url: https://a/r\n  headers: [X-A]", "auth.json.headers", "must look like"),
        ("json:\n  refresh_url: https://a/r\n  bogus: 1", "auth.json.bogus", "unknown key"),
        ("discover: true\nissuer: https://a", "auth.discover", "leave out auth.token_url and auth.issuer"),
        ("discover: true\nclient_id: c\nclient_secret_file: SECRET", "auth.discover", "public client only"),
        ("token_url: https://a/t", "auth.client_id", "auth.discover: true, a client is registered"),
        ("token_url: https://a/t\nclient_id: a\nauthorization_url: ftp://x", "auth.authorization_url", "http or https"),
        ("token_url: https://a/t\nclient_id: a\nresource: [relative/path]", "auth.resource", "absolute URI"),
        (
            "token_url: https://a/t\nclient_id: a\nauthorization_params: [state=x]", "auth.authorization_params",
            "set by bearerd"
        ),
        ("token_url: https://a/t\nclient_id: a\nredirect_port: 70000", "auth.redirect_port", "from 0 to 65535"),
        ("token_url: https://a/t\nclient_id: a\nscope_step_up: true", "auth.scope_step_up_allow", "required"),
        (
            "token_url: https://a/t\nclient_id: a\nscope_step_up: true\nscope_step_up_allow: [admin]",
            "auth.scope_step_up",
            "applies to a client token"
        ),
        (
            "token_url: https://a/t\nclient_id: a\nscope_step_up_allow: [\"a b\"]", "auth.scope_step_up_allow",
            "one scope"
        ),
    ])
    func badAuthValueNamesItsKey(lines: String, key: String, message: String) {
        do {
            _ = try self.load(auth: lines)
            Issue.record("no error for \(lines)")
        } catch {
            #expect(
                error.issues.contains { $0.key == key && $0.message.contains(message) },
                "expected \(key): …\(message)… in \(error.issues)"
            )
        }
    }

    @Test func discoveryNeedsOnlyTheUpstream() throws {
        let config = try self.load(auth: "discover: true")
        guard case .oauth2(let client) = config.auth.source else {
            Issue.record("not oauth2")
            return
        }
        #expect(client.discover && client.resourceURL == "https://api.example.com" && client.clientID.isEmpty)
    }

    /// A bad refresh_body is one problem, not also one of a logout_body nobody wrote.
    @Test func aBadRefreshBodyIsReportedOnce() {
        do {
            _ = try self.load(auth: "json:\n  refresh_url: https://a/r\n  refresh_body: '{}'")
            Issue.record("accepted")
        } catch {
            #expect(error.issues.map(\.key) == ["auth.json.refresh_body"], "\(error.issues)")
        }
    }
}

@Suite("Config: the token store")
struct StoreConfigTests {
    let directory: TemporaryDirectory

    init() throws {
        self.directory = try TemporaryDirectory()
    }

    func issues(_ store: String, environment: [String: String] = [:]) throws -> [ConfigIssue] {
        let token = try self.directory.write("t", to: "token")
        let body = "upstream:\n  url: https://api.example.com\nauth:\n  static_token_file: \(token)\nstore:\n\(store)\n"
        do {
            _ = try ConfigLoader(environment: environment).load(
                yaml: body,
                source: "test.yaml",
                baseDirectory: self.directory.path
            )
            return []
        } catch {
            return error.issues
        }
    }

    @Test func aKeyOthersMayReadIsRefused() throws {
        let key = try self.directory.write(String(repeating: "k", count: 32), to: "key", mode: 0o644)
        let found = try self.issues("  key_file: \(key)")
        #expect(found.contains { $0.key == "store.key_file" && $0.message.contains("chmod 400") })
    }

    @Test func aMissingKeySaysHowToMakeOne() throws {
        let found = try self.issues("  key_file: /nonexistent/store.key")
        #expect(found.contains { $0.key == "store.key_file" && $0.message.contains("bearerd keygen") })
    }

    @Test func keyAndPassphraseAreExclusive() throws {
        let key = try self.directory.write(String(repeating: "k", count: 32), to: "key", mode: 0o400)
        let found = try self.issues("  key_file: \(key)\n  passphrase_file: \(key)")
        #expect(found.contains { $0.key == "store.passphrase_file" && $0.message.contains("not both") })
    }

    @Test func theStoreFollowsSystemdsStateDirectory() throws {
        let token = try self.directory.write("t", to: "token")
        let config = try ConfigLoader(environment: ["STATE_DIRECTORY": "/var/lib/bearerd-x"]).load(
            yaml: "upstream:\n  url: https://api.example.com\nauth:\n  static_token_file: \(token)\n",
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
        #expect(config.store.path == "/var/lib/bearerd-x/tokens.store")
    }
}
