import BearerdAuth
import BearerdConfig
import NIOCore
import NIOHTTP1
import Testing

@testable import BearerdProxy
@testable import BearerdWire

@Suite("Header rewriting")
struct HeaderRewriterTests {
    /// `upstream`: more lines of the `upstream` section (each indented by two spaces).
    static func settings(
        _ extra: String = "",
        url: String = "https://api.example.com/v2",
        upstream: String = ""
    ) throws -> ProxySettings {
        let directory = try BearerdTestSupportShim.directory()
        let yaml = "upstream:\n  url: \(url)\n\(upstream)auth:\n  static_token_file: \(directory)/token\n\(extra)"
        let config = try ConfigLoader(environment: [:]).load(yaml: yaml, source: "t", baseDirectory: directory)
        return try ProxySettings(configuration: config)
    }

    let token = BearerToken("tok-123")

    func rewrite(
        _ headers: HTTPHeaders,
        method: HTTPMethod = .GET,
        uri: String = "/users?id=1",
        settings: ProxySettings? = nil
    )
        throws -> HTTPRequestHead
    {
        let head = HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
        var out = ByteBuffer()
        _ = HeaderRewriter.upstreamRequest(
            try RequestHead(head),
            target: .rewritten(try #require(CanonicalTarget.parse(uri, allowPathParams: false).value)),
            token: self.token,
            peer: "127.0.0.1",
            settings: ProxySettings.Shared(try settings ?? Self.settings()),
            into: &out
        )
        return WireHeads.request(out)
    }

    @Test func hopByHopHeadersAndThoseNamedByConnectionAreRemoved() throws {
        let out = try self.rewrite([
            "host": "127.0.0.1:8080", "connection": "keep-alive, X-Secret-Hop, upgrade", "keep-alive": "timeout=5",
            "x-secret-hop": "1", "proxy-authorization": "Basic abc", "proxy-authenticate": "x", "te": "trailers",
            // A protocol not in proxy.allow_upgrades: its Upgrade is hop-by-hop like the rest
            // (an allowed one is forwarded: UpgradeParsingTests).
            "trailer": "x-checksum", "upgrade": "h2c", "proxy-connection": "keep-alive",
            "accept": "application/json",
        ])
        for name in [
            "connection", "keep-alive", "x-secret-hop", "proxy-authorization", "proxy-authenticate", "te", "trailer",
            "upgrade", "proxy-connection", "transfer-encoding",
        ] {
            #expect(!out.headers.contains(name: name), "\(name) crossed the proxy")
        }
        #expect(out.headers["accept"] == ["application/json"])
    }

    @Test func hostBecomesTheUpstreamsAndThePathIsJoined() throws {
        let out = try self.rewrite(["host": "127.0.0.1:8080"])
        #expect(out.headers["host"] == ["api.example.com"])
        #expect(out.uri == "/v2/users?id=1")
        #expect(out.version == .http1_1)
    }

    @Test func theClientsAuthorizationIsReplacedByDefault() throws {
        let out = try self.rewrite(["host": "h", "authorization": "Bearer client-own"])
        #expect(out.headers["authorization"] == ["Bearer tok-123"])
    }

    @Test func keepForwardsTheClientsAuthorizationWithoutAToken() throws {
        let settings = try Self.settings("proxy:\n  client_authorization: keep")
        let head = HTTPRequestHead(
            version: .http1_1,
            method: .GET,
            uri: "/",
            headers: ["host": "h", "authorization": "Basic xyz"]
        )
        var bytes = ByteBuffer()
        _ = HeaderRewriter.upstreamRequest(
            try RequestHead(head),
            target: .rewritten(try #require(CanonicalTarget.parse("/", allowPathParams: false).value)),
            token: nil,
            peer: nil,
            settings: ProxySettings.Shared(settings),
            into: &bytes
        )
        let out = WireHeads.request(bytes)
        #expect(out.headers["authorization"] == ["Basic xyz"])
    }

    @Test func forwardedHeadersAreSetFromWhatBearerdSawNotWhatTheClientClaimed() throws {
        let out = try self.rewrite([
            "host": "127.0.0.1:8080", "x-forwarded-for": "6.6.6.6", "x-forwarded-proto": "https",
            "x-forwarded-host": "evil",
        ])
        #expect(out.headers["x-forwarded-for"] == ["127.0.0.1"])
        #expect(out.headers["x-forwarded-proto"] == ["http"])
        #expect(out.headers["x-forwarded-host"] == ["127.0.0.1:8080"])
    }

    @Test func forwardedIsSetFromWhatBearerdSawAndOverrideHeadersAreStripped() throws {
        let overrides: HTTPHeaders = [
            "host": "127.0.0.1:8080", "X-HTTP-Method-Override": "DELETE", "x-http-method": "DELETE",
            "x-method-override": "DELETE", "X-Original-URL": "/admin", "x-original-uri": "/admin",
            "x-original-method": "DELETE", "X-Rewrite-URL": "/admin", "X-Real-IP": "10.0.0.1",
            "x-client-ip": "10.0.0.1", "x-forwarded-prefix": "/admin", "Forwarded": "for=10.0.0.1;host=evil",
            "accept": "*/*",
        ]
        let out = try self.rewrite(overrides)
        for (name, _) in overrides where !["host", "accept"].contains(name) {
            #expect(
                out.headers[name].allSatisfy { !$0.contains("10.0.0.1") && !$0.contains("DELETE") && $0 != "/admin" },
                "\(name) passed"
            )
        }
        #expect(out.headers["forwarded"] == ["for=127.0.0.1;proto=http;host=\"127.0.0.1:8080\""])
        #expect(out.headers["accept"] == ["*/*"])
        let passed = try self.rewrite(
            overrides,
            settings: Self.settings("proxy:\n  pass_override_headers: true\n  forwarded_headers: false")
        )
        #expect(passed.headers["x-http-method-override"] == ["DELETE"])
        #expect(passed.headers["forwarded"] == ["for=10.0.0.1;host=evil"])
    }

    /// The whole family (issue 35): every header an upstream or its load balancer reads as the
    /// client's address, host, port, scheme, prefix, original URL or method, in any case.
    @Test(
        arguments: OverrideHeaders.all.map(\.name) + [
            "X-Forwarded-Port", "x-FORWARDED-server", "True-Client-IP", "X_Original_URL", "x_real_ip",
            "X_FORWARDED_PREFIX",
        ]
    )
    func everyHeaderThatClaimsTheCallersIdentityOrRouteIsRemoved(name: String) throws {
        let headers: HTTPHeaders = ["host": "127.0.0.1:8080", name: "10.9.8.7", "accept": "*/*"]
        let out = try self.rewrite(headers)
        #expect(!out.headers.contains(name: name), "\(name) passed")
        #expect(out.headers["accept"] == ["*/*"])
        let passed = try self.rewrite(headers, settings: Self.settings("proxy:\n  pass_override_headers: true"))
        #expect(passed.headers[name] == ["10.9.8.7"])
    }

    @Test func forwardedHeadersCanBeTurnedOff() throws {
        let out = try self.rewrite(
            ["host": "h", "x-forwarded-for": "10.0.0.1"],
            settings: Self.settings("proxy:\n  forwarded_headers: false")
        )
        #expect(out.headers["x-forwarded-for"] == ["10.0.0.1"])
        #expect(!out.headers.contains(name: "x-forwarded-proto"))
    }

    @Test func framingComesFromTheOriginalMessage() throws {
        let sized = try self.rewrite(
            ["host": "h", "content-length": "5", "connection": "content-length"],
            method: .POST
        )
        #expect(sized.headers["content-length"] == ["5"], "Connection must not strip the framing")
        let chunked = try self.rewrite(["host": "h", "transfer-encoding": "chunked"], method: .POST)
        #expect(chunked.headers["transfer-encoding"] == ["chunked"])
        #expect(!chunked.headers.contains(name: "content-length"))
        let empty = try self.rewrite(["host": "h"], method: .POST)
        #expect(empty.headers["content-length"] == ["0"])
        let get = try self.rewrite(["host": "h"], method: .GET)
        #expect(!get.headers.contains(name: "content-length") && !get.headers.contains(name: "transfer-encoding"))
    }

    @Test func expectIsHandledByBearerdAndNotForwarded() throws {
        let out = try self.rewrite(["host": "h", "expect": "100-continue", "content-length": "3"], method: .PUT)
        #expect(!out.headers.contains(name: "expect"))
    }

    @Test func responseHopByHopHeadersAreRemoved() throws {
        let upstream = HTTPResponseHead(
            version: .http1_1,
            status: .ok,
            headers: [
                "connection": "keep-alive, x-internal", "keep-alive": "timeout=5", "x-internal": "1",
                "transfer-encoding": "chunked", "proxy-authenticate": "Basic", "upgrade": "h2c", "trailer": "x",
                "content-type": "application/json", "www-authenticate": "Bearer",
            ]
        )
        let get = HTTPRequestHead(version: .http1_1, method: .GET, uri: "/")
        let out = try WireHeads.clientResponse(upstream, for: get, close: false)
        for name in ["connection", "keep-alive", "x-internal", "proxy-authenticate", "upgrade", "trailer"] {
            #expect(!out.headers.contains(name: name), "\(name) crossed the proxy")
        }
        // The upstream's chunking is its own: one transfer-encoding header, set by bearerd for the
        // body it streams (no Content-Length here).
        #expect(out.headers["transfer-encoding"] == ["chunked"])
        #expect(out.headers["content-type"] == ["application/json"])
        #expect(out.headers["www-authenticate"] == ["Bearer"])
        let closing = try WireHeads.clientResponse(
            upstream,
            for: HTTPRequestHead(version: .http1_0, method: .GET, uri: "/"),
            close: true
        )
        #expect(closing.headers["connection"] == ["close"])
        #expect(!closing.headers.contains(name: "transfer-encoding"), "HTTP/1.0 has no chunking")
        #expect(closing.version == .http1_0)
    }

    @Test func framingIsSetForTheClient() throws {
        func response(
            _ status: HTTPResponseStatus,
            _ headers: HTTPHeaders,
            _ method: HTTPMethod = .GET
        ) throws
            -> HTTPHeaders
        {
            let head = HTTPResponseHead(version: .http1_1, status: status, headers: headers)
            return try WireHeads.clientResponse(
                head,
                for: HTTPRequestHead(version: .http1_1, method: method, uri: "/"),
                close: false
            )
            .headers
        }
        #expect(try response(.ok, ["content-length": "5"])["content-length"] == ["5"])
        #expect(try !response(.ok, ["content-length": "5"]).contains(name: "transfer-encoding"))
        #expect(try response(.ok, [:])["transfer-encoding"] == ["chunked"])
        #expect(try !response(.ok, ["content-length": "5"], .HEAD).contains(name: "transfer-encoding"))
        #expect(try !response(.ok, [:], .HEAD).contains(name: "transfer-encoding"))
        #expect(try response(.noContent, ["content-length": "0"]).isEmpty)
        #expect(try response(.notModified, ["etag": "x"])["etag"] == ["x"])
        #expect(try !response(.notModified, [:]).contains(name: "transfer-encoding"))
    }
}
