import BearerdConfig
import BearerdProxy
import BearerdTestSupport
import Foundation
import Logging
import Testing

@Suite("Config validation: each rule names its key")
struct ConfigValidationTests {
    let directory: TemporaryDirectory
    let tokenFile: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.tokenFile = try self.directory.write("t0ken\n", to: "token")
    }

    func load(_ body: String, environment: [String: String] = [:]) throws(ConfigError) -> BearerdConfiguration {
        try ConfigLoader(environment: environment).load(
            yaml: body,
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
    }

    func minimal(_ extra: String = "") -> String {
        """
        upstream:
          url: https://api.example.com/v2
        auth:
          static_token_file: \(self.tokenFile)
        \(extra)
        """
    }

    func issues(_ body: String, environment: [String: String] = [:]) -> [ConfigIssue] {
        do {
            _ = try self.load(body, environment: environment)
            return []
        } catch {
            return error.issues
        }
    }

    @Test func minimalConfigGetsDocumentedDefaults() throws {
        let config = try self.load(self.minimal())
        #expect(config.listen == [.tcp(host: "127.0.0.1", port: 8080)])
        #expect(config.allowRemote == false)
        #expect(config.socketMode == 0o600)
        #expect(config.shutdownGrace == .seconds(30))
        #expect(config.upstream.target.basePath == "/v2")
        #expect(config.upstream.connectTimeout == .seconds(5))
        #expect(config.upstream.responseTimeout == .seconds(60))
        #expect(config.upstream.idleTimeout == .seconds(60))
        #expect(config.upstream.maxIdleConnections == 512)
        #expect(config.proxy.clientAuthorization == .replace)
        #expect(config.proxy.forwardedHeaders)
        #expect(config.proxy.limits.maxRequestBody == nil)
        #expect(config.proxy.limits.maxHeaderSize == 64 * 1024)
        #expect(config.log.level == .info)
        #expect(config.log.access)
        #expect(!config.log.accessQuery)
    }

    @Test(
        "a bad value is reported with its key",
        arguments: [
            (
                "upstream:\n  url: ftp://x\nauth:\n  static_token_file: TOKEN", "upstream.url",
                "must be an http or https URL (got \"ftp://x\")"
            ),
            (
                "upstream:\n  url: http://user:pw@x\nauth:\n  static_token_file: TOKEN", "upstream.url",
                "must not hold a user name"
            ),
            (
                "upstream:\n  url: http://x/?a=1\nauth:\n  static_token_file: TOKEN", "upstream.url",
                "must not have a query"
            ),
            ("auth:\n  static_token_file: TOKEN", "upstream.url", "required"),
            ("upstream:\n  url: http://x", "auth", "required: a token source"),
            ("MIN\nlisten: [\"0.0.0.0:8080\"]", "listen", "is not a loopback address"),
            ("MIN\nlisten: [\"127.0.0.1:99999\"]", "listen", "port must be a number"),
            ("MIN\nlisten: [\"example.com:80\"]", "listen", "must be an IP address"),
            ("MIN\nlisten: [\"unix:relative.sock\"]", "listen", "must be absolute"),
            ("MIN\nlisten: [\"127.0.0.1:1\", \"127.0.0.1:1\"]", "listen", "listed twice"),
            ("MIN\nlisten: []", "listen", "at least one"),
            ("MIN\nallow_remote: maybe", "allow_remote", "must be true or false"),
            ("MIN\nsocket_mode: \"0999\"", "socket_mode", "octal file mode"),
            ("MIN\nsocket_group: no-such-group-bearerd", "socket_group", "no group named"),
            ("MIN\nthreads: -1", "threads", "whole number"),
            ("MIN\nshutdown_grace: soon", "shutdown_grace", "a duration"),
            (
                "MIN\nupstream:\n  url: http://x\n  ca_file: /etc/hostname", "upstream.ca_file",
                "only applies to an https upstream"
            ),
            ("MIN\nupstream:\n  url: https://x\n  ca_file: /nonexistent.pem", "upstream.ca_file", "cannot read"),
            ("MIN\nupstream:\n  url: https://x\n  server_name: \"a b\"", "upstream.server_name", "must be a DNS name"),
            ("MIN\nupstream:\n  url: https://x\n  connect_timeout: 0s", "upstream.connect_timeout", "from "),
            ("MIN\nupstream:\n  url: https://x\n  response_timeout: -1s", "upstream.response_timeout", "a duration"),
            ("MIN\nupstream:\n  url: https://x\n  idle_timeout: 1x", "upstream.idle_timeout", "a duration"),
            (
                "MIN\nupstream:\n  url: https://x\n  max_idle_connections: lots", "upstream.max_idle_connections",
                "whole number"
            ),
            ("MIN\nproxy:\n  client_authorization: merge", "proxy.client_authorization", "replace, keep or reject"),
            ("MIN\nproxy:\n  forwarded_headers: 2", "proxy.forwarded_headers", "true or false"),
            ("MIN\nproxy:\n  browser_guard: maybe", "proxy.browser_guard", "true or false"),
            ("MIN\nsocket_allow_uids: [no-such-user-bearerd]", "socket_allow_uids", "no user or group named"),
            ("MIN\nproxy:\n  deny_methods: [\"GET /x\"]", "proxy.deny_methods", "HTTP methods"),
            ("MIN\nproxy:\n  allow_paths: [api]", "proxy.allow_paths", "paths like /api/"),
            ("MIN\nproxy:\n  deny_paths: [\"/a%2fb\"]", "proxy.deny_paths", "%2F"),
            ("MIN\nproxy:\n  allow_paths: [\"/a/../b\"]", "proxy.allow_paths", ". or .. segment"),
            ("MIN\nproxy:\n  client_key_header: \"X Key\"", "proxy.client_key_header", "header name"),
            ("MIN\nproxy:\n  client_key_header: Authorization", "proxy.client_key_header", "header name"),
            ("MIN\nproxy:\n  client_key_file: /nonexistent/key", "proxy.client_key_file", "/nonexistent/key"),
            (
                "MIN\nproxy:\n  allowed_origins: [\"https://app.example/login\"]", "proxy.allowed_origins",
                "without a path"
            ),
            ("MIN\nproxy:\n  allowed_origins: [\"app.example\"]", "proxy.allowed_origins", "an origin like"),
            ("MIN\nproxy:\n  allowed_hosts: [\"http://app.example\"]", "proxy.allowed_hosts", "a host name"),
            ("MIN\nproxy:\n  allowed_hosts: [\"app.example:99999\"]", "proxy.allowed_hosts", "a host name"),
            ("MIN\nproxy:\n  allowed_hosts: [\"[::1\"]", "proxy.allowed_hosts", "a host name"),
            ("MIN\nproxy:\n  rebinding_guard: maybe", "proxy.rebinding_guard", "true or false"),
            ("MIN\nproxy:\n  max_request_body: 0", "proxy.max_request_body", "more than 0"),
            ("MIN\nproxy:\n  max_request_body: big", "proxy.max_request_body", "a size"),
            ("MIN\nproxy:\n  max_header_size: 10", "proxy.max_header_size", "from 1KiB to 1MiB"),
            ("MIN\nproxy:\n  max_request_line: 100", "proxy.max_request_line", "from 256B to 1MiB"),
            ("MIN\nproxy:\n  max_header_count: 0", "proxy.max_header_count", "from 1 to 10000"),
            ("MIN\nproxy:\n  max_connections: 0", "proxy.max_connections", "at least 1"),
            ("MIN\nproxy:\n  max_connections: many", "proxy.max_connections", "a whole number"),
            ("MIN\nproxy:\n  header_timeout: 0", "proxy.header_timeout", "from "),
            ("MIN\nproxy:\n  body_timeout: soon", "proxy.body_timeout", "a duration"),
            // Plain http only to this machine.
            ("MIN\nupstream:\n  url: http://api.example/v2", "upstream.url", "allow_insecure_http"),
            ("MIN\nallow_insecure_http: maybe", "allow_insecure_http", "true or false"),
            // Durations have ranges: nothing traps, and nothing waits for years.
            ("MIN\nproxy:\n  header_timeout: 1e300s", "proxy.header_timeout", "at most 1h"),
            ("MIN\nproxy:\n  body_timeout: 99999999999999999h", "proxy.body_timeout", "at most 24h"),
            ("MIN\nproxy:\n  body_timeout: 25h", "proxy.body_timeout", "from 100ms to 24h (got 25h)"),
            ("MIN\nshutdown_grace: 9223372036854775807s", "shutdown_grace", "at most 1h"),
            (
                "MIN\nupstream:\n  url: https://x\n  response_timeout: 2h\n  idle_timeout: 1ms",
                "upstream.idle_timeout", "from 100ms"
            ),
            ("MIN\nproxy:\n  client_idle_timeout: 0", "proxy.client_idle_timeout", "from "),
            ("MIN\nlog:\n  level: loud", "log.level", "must be one of"),
            ("MIN\nlog:\n  access: sometimes", "log.access", "true or false"),
            ("MIN\nlog:\n  access_query: 1", "log.access_query", "true or false"),
            ("MIN\nupstrem:\n  url: http://x", "upstrem", "unknown key; did you mean upstream"),
            ("MIN\nproxy:\n  max_body: 1", "proxy.max_body", "unknown key"),
            ("MIN\nlisten:\n  a: b", "listen", "must be a list"),
            ("MIN\nlog: verbose", "log", "must be a mapping"),
            ("MIN\nupstream:\n  url: [a, b]", "upstream.url", "single value"),
            // One check for every URL the config names (ConfigBuilder.checkHTTPURL): bounded,
            // with a host, no fragment where a browser would drop it, plain http only to loopback.
            (
                "upstream:\n  url: http://x\nauth:\n  token_url: https://auth.example/\(String(repeating: "a", count: 2100))\n  client_id: c",
                "auth.token_url", "must be an http or https URL"
            ),
            (
                "upstream:\n  url: http://x\nauth:\n  issuer: https://auth.example\n  client_id: c\n  authorization_url: https://auth.example/authorize#x",
                "auth.authorization_url", "without a fragment"
            ),
            (
                "upstream:\n  url: http://x\nauth:\n  token_url: http://auth.example/token\n  client_id: c",
                "auth.token_url", "allow_insecure_http"
            ),
            ("MIN\ntracing:\n  endpoint: otlp://collector:4318", "tracing.endpoint", "must be an http or https URL"),
        ]
    )
    func badValueNamesItsKey(body: String, key: String, message: String) {
        var text = body.replacingOccurrences(of: "TOKEN", with: self.tokenFile)
        if text.hasPrefix("MIN\n") {
            // Start from a valid file; later sections in `body` override its keys.
            let rest = String(text.dropFirst(4))
            text =
                rest.contains("upstream:")
                ? "auth:\n  static_token_file: \(self.tokenFile)\n\(rest)" : self.minimal(rest)
        }
        let found = self.issues(text)
        #expect(
            found.contains { $0.key == key && $0.message.contains(message) },
            "expected \(key): …\(message)… in \(found)"
        )
    }

    /// sun_path holds 107 bytes and a NUL: a socket path up to 107 bytes is valid, one longer
    /// is refused naming its key and the limit, for a listener and for the admin socket.
    @Test func aSocketPathMayBeAsLongAsTheKernelAllows() throws {
        let longest = "/" + String(repeating: "a", count: 106)
        let config = try self.load(self.minimal("listen: [\"unix:\(longest)\"]\nadmin:\n  socket: \(longest)"))
        #expect(config.listen == [.unix(path: longest)] && config.admin.socket == longest)

        let over = longest + "b"
        let found = self.issues(self.minimal("listen: [\"unix:\(over)\"]\nadmin:\n  socket: \(over)"))
        for key in ["listen", "admin.socket"] {
            #expect(
                found.contains { $0.key == key && $0.message.contains("(107 bytes, got 108)") },
                "expected \(key): …107 bytes… in \(found)"
            )
        }
    }

    @Test func everyProblemIsReportedNotJustTheFirst() {
        let found = self.issues("upstream:\n  url: ftp://x\nlog:\n  level: loud\nbogus: 1")
        #expect(Set(found.map(\.key)) == ["upstream.url", "log.level", "bogus", "auth"])
    }

    @Test func nonLoopbackIsAllowedWhenAskedFor() throws {
        let config = try self.load(
            self.minimal("listen: [\"0.0.0.0:8080\"]\nallow_remote: true\nsocket_allow_any_user: true")
        )
        #expect(config.listen == [.tcp(host: "0.0.0.0", port: 8080)])
        #expect(config.socketAllowAnyUser)
    }

    /// Callers on other hosts have no local uid: with allow_remote, serving them is said aloud.
    @Test func allowRemoteAsksForSocketAllowAnyUser() {
        let found = self.issues(self.minimal("listen: [\"0.0.0.0:8080\"]\nallow_remote: true"))
        #expect(found.map(\.key) == ["socket_allow_any_user"], "\(found)")
        #expect(found.first?.message.contains("allow_remote") == true)
    }

    @Test func environmentOverridesTheFile() throws {
        let config = try self.load(
            self.minimal("log:\n  level: debug"),
            environment: [
                "BEARERD_UPSTREAM_URL": "http://127.0.0.1:9401/base",
                "BEARERD_LISTEN": "127.0.0.1:1234,[::1]:1234,unix:/run/bearerd/p.sock",
                "BEARERD_LOG_LEVEL": "warning",
                "BEARERD_PROXY_MAX_REQUEST_BODY": "10MiB",
            ]
        )
        #expect(config.upstream.target.description == "http://127.0.0.1:9401/base")
        #expect(
            config.listen == [
                .tcp(host: "127.0.0.1", port: 1234), .tcp(host: "::1", port: 1234), .unix(path: "/run/bearerd/p.sock"),
            ]
        )
        #expect(config.log.level == .warning)
        #expect(config.proxy.limits.maxRequestBody == 10 << 20)
    }

    @Test func aBadEnvironmentValueNamesTheVariable() {
        let found = self.issues(self.minimal(), environment: ["BEARERD_LOG_LEVEL": "loud"])
        #expect(found.contains { $0.key == "log.level (from BEARERD_LOG_LEVEL)" })
    }

    @Test func unknownEnvironmentSettingsAreErrors() {
        let found = self.issues(
            self.minimal(),
            environment: ["BEARERD_UPSTREAM_URI": "http://x", "BEARERD_CONFIG": "/x"]
        )
        #expect(found.map(\.key) == ["BEARERD_UPSTREAM_URI"])
    }

    @Test func relativeSecretFilesResolveInTheCredentialsDirectory() throws {
        let credentials = try TemporaryDirectory()
        try credentials.write("cred-token", to: "api-token")
        let body = "upstream:\n  url: https://x\nauth:\n  static_token_file: api-token"
        let config = try self.load(body, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        #expect(config.auth.staticTokenFile == credentials.path + "/api-token")
        // Without systemd's directory, the name resolves next to the config file.
        try self.directory.write("t", to: "api-token")
        #expect(try self.load(body).auth.staticTokenFile == self.directory.path + "/api-token")
    }

    @Test func aSecretFileReadableByOthersIsRefused() throws {
        let loose = try self.directory.write("t", to: "loose", mode: 0o644)
        let found = self.issues("upstream:\n  url: http://x\nauth:\n  static_token_file: \(loose)")
        #expect(found.contains { $0.key == "auth.static_token_file" && $0.message.contains("chmod 600") })
    }

    @Test func aMissingFileSaysWhatToDo() {
        #expect(throws: ConfigError.self) { try ConfigLoader(environment: [:]).load(path: "/nonexistent/bearerd.yaml") }
        do {
            _ = try ConfigLoader(environment: [:]).load(path: "/nonexistent/bearerd.yaml")
        } catch {
            #expect(error.description.contains("does not exist; create it from config/bearerd.example.yaml"))
        }
    }

    @Test func invalidYAMLIsAnErrorNotACrash() {
        let found = self.issues("upstream: [unclosed\n  url: x")
        #expect(found.first?.message.hasPrefix("not valid YAML") == true)
    }

    /// A YAML syntax error says where, never what the line holds: that line may carry a
    /// secret (Yams's own description quotes it).
    @Test(arguments: [
        "proxy:\n  add_headers: [\"X-Api-Key: sk-live-0123456789\n",
        "auth:\n  extra_params:\n    - \"audience=sk-live-0123456789\n",
        "proxy:\n  add_headers:\n  - X-Api-Key: sk-live-0123456789\n   bad: [\n",
        "upstream:\n  url: http://127.0.0.1:9\nupstream: sk-live-0123456789\n",
    ])
    func aYAMLErrorNamesTheLineNeverItsText(yaml: String) {
        let found = self.issues(yaml)
        let message = found.first?.message ?? ""
        #expect(message.hasPrefix("not valid YAML: line "), "\(message)")
        #expect(!found.contains { $0.description.contains("sk-live") }, "\(found)")
    }
}
