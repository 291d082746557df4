import BearerdTestSupport
import Foundation
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

@Suite("Hostile requests are refused and nothing reaches the upstream")
struct ProxyRefusalTests {
    @Test(
        "refused with the status and nothing sent upstream",
        arguments: [
            ("GET http://other.example/steal HTTP/1.1\r\nHost: other.example\r\n\r\n", "400"),
            ("GET http://127.0.0.1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "400"),
            ("CONNECT other.example:443 HTTP/1.1\r\nHost: other.example:443\r\n\r\n", "400"),
            ("OPTIONS * HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: a\r\nHost: other.example\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: other.example/x?@y\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\n\r\n", "400"),
            ("GET /v2/../admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            (
                "POST /x HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                "400"
            ),
            ("POST /x HTTP/1.1\r\nHost: {host}\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello", "400"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nX-Folded: a\r\n b\r\n\r\n", "400"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nX-Big: \(String(repeating: "a", count: 70_000))\r\n\r\n", "431"),
            ("POST /x HTTP/1.1\r\nHost: {host}\r\nContent-Length: 2048\r\n\r\n", "413"),
            ("PUT /x HTTP/1.1\r\nHost: {host}\r\nExpect: magic\r\nContent-Length: 1\r\n\r\nx", "417"),
            ("NOT-HTTP\r\n\r\n", "400"),
            // What the request parser refuses where llhttp does (the `request` fuzz target
            // checks the rest): bare LF line ends, a method llhttp does not know, a repeated
            // Content-Length even of the same value, a tab around a framing value.
            ("GET /x HTTP/1.1\nHost: {host}\n\n", "400"),
            ("FOO /x HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("POST /x HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "400"),
            ("POST /x HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n", "400"),
            // A web page riding the token: foreign Origin, CORS preflight, Origin null (sandboxed
            // frames, file://), cross-site and same-site fetch metadata.
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nOrigin: https://evil.example\r\n\r\n", "403"),
            (
                "OPTIONS /x HTTP/1.1\r\nHost: {host}\r\nOrigin: https://evil.example\r\nAccess-Control-Request-Method: DELETE\r\n\r\n",
                "403"
            ),
            ("POST /x HTTP/1.1\r\nHost: {host}\r\nOrigin: null\r\nContent-Length: 0\r\n\r\n", "403"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nSec-Fetch-Site: cross-site\r\n\r\n", "403"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nSec-Fetch-Site: same-site\r\n\r\n", "403"),
            // DNS rebinding: a page's own name resolving to 127.0.0.1, with or without the port;
            // our names at another port; a bare address where the port is not 80.
            ("GET /x HTTP/1.1\r\nHost: rebind.evil.example:{port}\r\n\r\n", "403"),
            ("POST /x HTTP/1.1\r\nHost: rebind.evil.example\r\nContent-Length: 0\r\n\r\n", "403"),
            ("GET /x HTTP/1.1\r\nHost: localhost:1{port}\r\n\r\n", "403"),
            ("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "403"),
            ("GET /x HTTP/1.1\r\nHost: 127.0.0.1.evil.example:{port}\r\n\r\n", "403"),
            // Limits: a request target over max_request_line, too many header fields, and a
            // slowloris whose head never ends.
            ("GET /\(String(repeating: "a", count: 9000)) HTTP/1.1\r\nHost: {host}\r\n\r\n", "414"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\n\((1...100).map { "X-\($0): v\r\n" }.joined())\r\n", "431"),
            ("GET /x HTTP/1.1\r\nHost: {host}\r\nX-Slow: 1\r\nX-Slower: 2\r\n", "408"),
            // TRACE and TRACK echo the request, token included.
            ("TRACE /x HTTP/1.1\r\nHost: {host}\r\n\r\n", "405"),
            // The path checked is the path forwarded: deny_paths: ["/admin"] holds against every
            // spelling of /admin, and what has no single meaning across upstreams is refused.
            ("GET //admin/users HTTP/1.1\r\nHost: {host}\r\n\r\n", "403"),
            ("GET /ADMIN/users HTTP/1.1\r\nHost: {host}\r\n\r\n", "403"),
            ("GET /%61dmin HTTP/1.1\r\nHost: {host}\r\n\r\n", "403"),
            ("GET /x/..%2f..%2fadmin/ HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/%2e%2e/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/.%2E/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x%5c..%5cadmin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x%00/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x%zz HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/%252e%252e/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /admin;x=1 HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/..;/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/%c0%ae%c0%ae/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
            ("GET /x/%ef%bc%8e%ef%bc%8e/admin HTTP/1.1\r\nHost: {host}\r\n\r\n", "400"),
        ]
    )
    func refused(request: String, status: String) async throws {
        let yaml = "proxy:\n  max_request_body: 1KiB\n  header_timeout: 2s\n  deny_paths: [\"/admin\"]"
        try await ProxyFixture.with(yaml: yaml) { proxy in
            // Ask for a close so the raw client knows the answer is complete; a refused bodyless
            // request otherwise keeps its connection (tested below).
            let closing = request.replacingOccurrences(
                of: "\r\n\r\n",
                with: "\r\nConnection: close\r\n\r\n",
                options: [],
                range: request.range(of: "\r\n\r\n")
            )
            let raw = try await proxy.raw(closing)
            #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(raw.prefix(200))")
            if status != "400" || !request.hasPrefix("CONNECT") {
                #expect(raw.contains("\"error\":"), "bearerd's own answers are JSON: \(raw.prefix(300))")
            }
            #expect(proxy.upstream.connectionCount == 0, "something reached the upstream")
            #expect(proxy.upstream.requests.isEmpty)
        }
    }

    @Test func anAllowedOriginAndSameOriginOrTypedRequestsPass() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  allowed_origins: [\"http://localhost:3000\"]") { proxy in
            for extra in [
                "Origin: http://LOCALHOST:3000\r\nSec-Fetch-Site: cross-site", "Sec-Fetch-Site: same-origin",
                "Sec-Fetch-Site: none",
            ] {
                let raw = try await proxy.raw(
                    "GET /x HTTP/1.1\r\nHost: {host}\r\n\(extra)\r\nConnection: close\r\n\r\n"
                )
                #expect(raw.hasPrefix("HTTP/1.1 200 "), "\(extra): \(raw.prefix(200))")
            }
            let refused = try await proxy.raw(
                "GET /x HTTP/1.1\r\nHost: {host}\r\nOrigin: http://localhost:3001\r\nConnection: close\r\n\r\n"
            )
            #expect(refused.hasPrefix("HTTP/1.1 403 ") && refused.contains("proxy.allowed_origins"))
            #expect(proxy.upstream.requests.count == 3)
        }
    }

    @Test func theListenersOwnNamesAndAllowedHostsPass() async throws {
        let yaml = "proxy:\n  allowed_hosts: [Bearerd.Internal, \"other.example:9999\"]"
        try await ProxyFixture.with(yaml: yaml) { proxy in
            let cases = [
                ("127.0.0.1:{port}", "200"), ("LocalHost:{port}", "200"), ("bearerd.internal:{port}", "200"),
                ("other.example:9999", "200"), ("bearerd.internal:1", "403"), ("other.example:{port}", "403"),
                ("bearerd.internal.evil.example:{port}", "403"),
            ]
            for (host, status) in cases {
                let raw = try await proxy.raw("GET /x HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n")
                #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(host): \(raw.prefix(200))")
                if status == "403" { #expect(raw.contains("proxy.allowed_hosts")) }
            }
            #expect(proxy.upstream.requests.count == 4)
        }
    }

    @Test func theRebindingGuardCanBeTurnedOff() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  rebinding_guard: false") { proxy in
            let raw = try await proxy.raw("GET /x HTTP/1.1\r\nHost: anything.example\r\nConnection: close\r\n\r\n")
            #expect(raw.hasPrefix("HTTP/1.1 200 "), "\(raw.prefix(200))")
        }
    }

    @Test func theBrowserGuardCanBeTurnedOff() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  browser_guard: false") { proxy in
            let raw = try await proxy.raw(
                "GET /x HTTP/1.1\r\nHost: {host}\r\nOrigin: https://evil.example\r\nSec-Fetch-Site: cross-site\r\nConnection: close\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 200 "), "\(raw.prefix(200))")
        }
    }

    @Test func tcpCallersNeedTheSharedKeyWhichNeverReachesTheUpstream() async throws {
        let directory = try TemporaryDirectory()
        let keyFile = try directory.write("shared-key-0123456789abcdef\n", to: "client-key", mode: 0o600)
        let socket = directory.path + "/proxy.sock"
        try await ProxyFixture.with(
            yaml: "proxy:\n  client_key_file: \(keyFile)",
            listen: ["127.0.0.1:0", "unix:\(socket)"]
        ) { proxy in
            for header in [
                "", "X-Bearerd-Key: wrong-key-0123456789abcdef\r\n", "X-Bearerd-Key: shared-key-0123456789abcde\r\n",
            ] {
                let raw = try await proxy.raw("GET /x HTTP/1.1\r\nHost: {host}\r\n\(header)Connection: close\r\n\r\n")
                #expect(
                    raw.hasPrefix("HTTP/1.1 403 ") && raw.contains("X-Bearerd-Key"),
                    "\(header): \(raw.prefix(200))"
                )
                #expect(!raw.contains("shared-key"), "the key is never echoed")
            }
            #expect(proxy.upstream.connectionCount == 0)
            let raw = try await proxy.raw(
                "GET /x HTTP/1.1\r\nHost: {host}\r\nx-bearerd-key: shared-key-0123456789abcdef\r\nConnection: close\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 200 "), "\(raw.prefix(200))")
            let forwarded = try #require(proxy.upstream.requests.first)
            #expect(!forwarded.head.headers.contains(name: "x-bearerd-key"), "stripped before forwarding")
            #expect(!proxy.logText.contains("shared-key"))
            // A unix-socket caller is limited by the socket's mode instead.
            try await TestHTTPClient.withConnection(to: .unix(path: socket), group: proxy.group) { client in
                let answer = try await client.send(.GET, "/via-unix")
                #expect(answer.status == 200)
            }
        }
    }

    @Test func methodAndPathListsDecideWhatIsForwarded() async throws {
        let yaml = """
            proxy:
              deny_methods: [DELETE]
              allow_paths: ["/api/"]
              deny_paths: ["/api/admin"]
            """
        try await ProxyFixture.with(yaml: yaml) { proxy in
            let cases: [(String, String, String)] = [
                ("GET", "/api/users?id=1", "200"),
                ("GET", "/api/administrator", "200"),
                ("DELETE", "/api/users/1", "403"),
                ("GET", "/other", "403"),
                ("GET", "/api", "403"),
                ("GET", "/api/admin", "403"),
                ("POST", "/api/admin/reset", "403"),
                ("GET", "/api/adm%69n/reset", "403"),
            ]
            for (method, path, status) in cases {
                let raw = try await proxy.raw(
                    "\(method) \(path) HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(method) \(path): \(raw.prefix(200))")
            }
            #expect(proxy.upstream.requests.map(\.head.uri).sorted() == ["/api/administrator", "/api/users?id=1"])
        }
    }

    @Test func anAllowedPrefixCannotBeEscapedAndTheCheckedPathIsTheForwardedOne() async throws {
        let yaml = "proxy:\n  allow_paths: [\"/public/\"]"
        try await ProxyFixture.with(yaml: yaml, upstreamPath: "/v2") { proxy in
            let cases: [(String, String)] = [
                ("/public/..%2f..%2fadmin/", "400"), ("/public/%2e%2e/admin", "400"), ("/public//../admin", "400"),
                ("/Public/x", "403"), ("/public", "403"), ("//public//a//b/%7e%41?q=%2f", "200"),
            ]
            for (path, status) in cases {
                let raw = try await proxy.raw("GET \(path) HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(path): \(raw.prefix(200))")
            }
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/v2/public/a/b/~A?q=%2F"])
        }
    }

    @Test func pathParametersPassWhenAllowedButNeverHideADotSegment() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  allow_path_params: true") { proxy in
            for (path, status) in [("/a;v=1/b", "200"), ("/a/..;x/b", "400"), ("/a/%2e;x/b", "400")] {
                let raw = try await proxy.raw("GET \(path) HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(path): \(raw.prefix(200))")
            }
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/a;v=1/b"])
        }
    }

    /// Two real uids on one unix socket opened to everyone (mode 0666) and on the TCP port: only
    /// the listed one is served on either. Needs root, to connect as uid 65534.
    @Test(.enabled(if: getuid() == 0), arguments: [(0, "0"), (65534, "65534")])
    func onlyListedUIDsMayUseTheUnixSocket(allowed: Int, label: String) async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.path + "/proxy.sock"
        let yaml = "socket_mode: \"0666\"\nsocket_allow_uids: [\(label)]"
        try await ProxyFixture.with(yaml: yaml, listen: ["127.0.0.1:0", "unix:\(socket)"]) { proxy in
            for uid in [0, 65534] {
                let answer = try PeerProbe.answerBytes(to: socket, asUID: uid)
                if uid == allowed {
                    #expect(Int(answer).map { $0 > 0 } == true, "uid \(uid) is listed and got \(answer)")
                } else {
                    #expect(answer == "0", "uid \(uid) is not listed and got \(answer)")
                }
            }
            #expect(proxy.upstream.requests.count == 1, "only the listed caller's request went upstream")
            // The TCP listener knows its callers too: the owner of the client's socket.
            for uid in [0, 65534] {
                let answer = try PeerProbe.answerBytes(port: proxy.port, asUID: uid)
                if uid == allowed {
                    #expect(Int(answer).map { $0 > 0 } == true, "TCP: uid \(uid) is listed and got \(answer)")
                } else {
                    #expect(answer == "0", "TCP: uid \(uid) is not listed and got \(answer)")
                }
            }
            #expect(proxy.upstream.requests.count == 2)
            #expect(proxy.logText.contains("a caller not in socket_allow_uids/socket_allow_gids was closed"))
        }
    }

    /// With no list, only bearerd's own uid and root are served, on the unix socket opened to
    /// everyone (mode 0666) and on the TCP port; `socket_allow_any_user` serves anyone. Needs
    /// root, to connect as uid 65534.
    @Test(.enabled(if: getuid() == 0), arguments: [false, true])
    func withNoListOnlyBearerdsOwnUIDAndRootAreServed(anyUser: Bool) async throws {
        let directory = try TemporaryDirectory()
        let socket = directory.path + "/proxy.sock"
        let yaml = "socket_mode: \"0666\"" + (anyUser ? "\nsocket_allow_any_user: true" : "")
        try await ProxyFixture.with(yaml: yaml, listen: ["127.0.0.1:0", "unix:\(socket)"]) { proxy in
            for uid in [0, 65534] {
                let served = uid == 0 || anyUser
                let unix = try PeerProbe.answerBytes(to: socket, asUID: uid)
                let tcp = try PeerProbe.answerBytes(port: proxy.port, asUID: uid)
                for (listener, answer) in [("unix", unix), ("tcp", tcp)] {
                    if served {
                        #expect(Int(answer).map { $0 > 0 } == true, "\(listener): uid \(uid) got \(answer)")
                    } else {
                        #expect(answer == "0", "\(listener): uid \(uid) is nobody's choice and got \(answer)")
                    }
                }
            }
            #expect(proxy.upstream.requests.count == (anyUser ? 4 : 2))
            if !anyUser {
                #expect(proxy.logText.contains("a caller not in socket_allow_uids/socket_allow_gids was closed"))
            }
        }
    }

    /// As any user: a TCP caller is known by the owner of its socket, and closed unanswered
    /// when its uid is not listed.
    @Test(arguments: [true, false])
    func aTCPCallerIsKnownByItsSocketsOwner(listed: Bool) async throws {
        let uid = listed ? getuid() : getuid() &+ 12_345
        try await ProxyFixture.with(yaml: "socket_allow_uids: [\(uid)]") { proxy in
            let raw = try? await proxy.raw("GET /tcp HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
            if listed {
                #expect(raw?.hasPrefix("HTTP/1.1 200 ") == true, "\(raw ?? "nothing")")
                #expect(proxy.logText.contains("caller_uid: \(getuid())") || proxy.logText.contains("caller_uid"))
            } else {
                #expect(raw == nil || raw == "", "\(raw ?? "")")
                #expect(proxy.upstream.requests.isEmpty)
                #expect(proxy.logText.contains("a caller not in socket_allow_uids/socket_allow_gids was closed"))
            }
        }
    }

    @Test func aRefusedBodylessRequestKeepsTheConnectionForTheNext() async throws {
        try await ProxyFixture.with { proxy in
            let raw = try await proxy.raw(
                "GET /a/../b HTTP/1.1\r\nHost: {host}\r\n\r\nGET /fine HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 400 "), "\(raw)")
            #expect(raw.contains("HTTP/1.1 200 OK") && raw.hasSuffix("ok"), "\(raw)")
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/fine"])
        }
    }

    @Test func aChunkedBodyOverTheLimitIsCutOffWith413() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  max_request_body: 10") { proxy in
            let raw = try await proxy.raw(
                "POST /x HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n12345678\r\n8\r\n12345678\r\n0\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 413 "), "\(raw)")
            #expect(proxy.upstream.requests.isEmpty, "the upstream must not see a complete request")
        }
    }

    @Test func rejectPolicyRefusesAClientAuthorizationHeader() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  client_authorization: reject") { proxy in
            let raw = try await proxy.raw(
                "GET /x HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer own\r\nConnection: close\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 400 "))
            #expect(proxy.upstream.connectionCount == 0)
        }
    }
}
