import BearerdAuth
import BearerdProxy
import BearerdSockets
import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@Suite("Forwarding through a real proxy and upstream")
struct ProxyForwardingTests {
    @Test func forwardsMethodPathQueryHeadersAndBodyWithTheToken() async throws {
        try await ProxyFixture.with(upstreamPath: "/v2/") { proxy in
            let response = try await proxy.send(
                .PATCH,
                "/users/7?x=1&y=%2F",
                headers: ["authorization": "Bearer client-supplied", "x-custom": "kept"],
                text: "{\"name\":\"a\"}"
            )
            #expect(response.status == 200)
            let seen = try #require(proxy.upstream.requests.first)
            #expect(seen.head.method == .PATCH)
            #expect(seen.head.uri == "/v2/users/7?x=1&y=%2F")
            #expect(seen.head.headers["authorization"] == ["Bearer \(ProxyFixture.token)"])
            #expect(seen.head.headers["host"] == ["127.0.0.1:\(proxy.upstream.port)"])
            #expect(seen.head.headers["x-custom"] == ["kept"])
            #expect(seen.bodyText == "{\"name\":\"a\"}")
        }
    }

    @Test func upstreamConnectionsAreKeptAliveAndReused() async throws {
        try await ProxyFixture.with { proxy in
            for _ in 0..<3 {
                try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                    for _ in 0..<5 {
                        let response = try await client.send(.GET, "/")
                        #expect(response.status == 200)
                    }
                }
            }
            #expect(proxy.upstream.requests.count == 15)
            #expect(proxy.upstream.connectionCount == 1)
        }
    }

    @Test func redirectsArePassedThroughNotFollowed() async throws {
        try await ProxyFixture.with(
            responder: Responder { _ in
                .respond(status: .found, headers: [("location", "http://elsewhere.example/login")], body: "")
            }
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 302)
            #expect(response.head.headers["location"] == ["http://elsewhere.example/login"])
            #expect(proxy.upstream.requests.count == 1)
        }
    }

    @Test func bodiesAreNeverDecompressed() async throws {
        let compressed = "\u{1f}\u{8b}not-really-gzip-but-opaque"
        try await ProxyFixture.with(
            responder: Responder { _ in
                .respond(status: .ok, headers: [("content-encoding", "gzip")], body: compressed)
            }
        ) { proxy in
            let response = try await proxy.send(.GET, "/x", headers: ["accept-encoding": "gzip"])
            #expect(response.head.headers["content-encoding"] == ["gzip"])
            #expect(response.bodyText == compressed)
            #expect(proxy.upstream.requests.first?.head.headers["accept-encoding"] == ["gzip"])
        }
    }

    @Test func headNoContentAndNotModifiedAreFramedWithoutABody() async throws {
        try await ProxyFixture.with(
            responder: Responder { request in
                switch request.head.uri {
                case "/204": .respond(status: .noContent, headers: [], body: "")
                case "/304": .respond(status: .notModified, headers: [("etag", "\"v1\"")], body: "")
                default:
                    .respond(
                        status: .ok,
                        headers: [("content-length", "11")],
                        body: request.head.method == .HEAD ? "" : "hello world"
                    )
                }
            }
        ) { proxy in
            let raw = try await proxy.raw(
                "HEAD /h HTTP/1.1\r\nHost: {host}\r\n\r\nGET /204 HTTP/1.1\r\nHost: {host}\r\n\r\n"
                    + "GET /304 HTTP/1.1\r\nHost: {host}\r\nIf-None-Match: \"v1\"\r\n\r\nGET /g HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            let responses = raw.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(responses.count == 4, "\(raw)")
            let parts = Array(responses)
            #expect(
                parts[0].hasPrefix("200") && parts[0].lowercased().contains("content-length: 11")
                    && parts[0].hasSuffix("\r\n\r\n")
            )
            #expect(
                parts[1].hasPrefix("204") && parts[1].hasSuffix("\r\n\r\n")
                    && !parts[1].lowercased().contains("transfer-encoding")
            )
            #expect(parts[2].hasPrefix("304") && parts[2].contains("etag") && parts[2].hasSuffix("\r\n\r\n"))
            #expect(parts[3].hasPrefix("200") && parts[3].hasSuffix("hello world"))
        }
    }

    @Test func expectContinueIsAnsweredBeforeTheBodyIsSent() async throws {
        try await ProxyFixture.with(responder: Responder { .ok("got \($0.bodyBytes)") }) { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                try await connection.send(
                    "PUT /up HTTP/1.1\r\nHost: \(proxy.host)\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"
                )
                let interim = try await connection.read(until: "\r\n\r\n")
                #expect(interim == "HTTP/1.1 100 Continue\r\n\r\n")
                #expect(proxy.upstream.requests.isEmpty)
                try await connection.send("hello")
                let final = try await connection.read(until: "got 5")
                #expect(final.hasPrefix("HTTP/1.1 200 OK"), "\(final)")
            }
            #expect(proxy.upstream.requests.first?.head.headers.contains(name: "expect") == false)
        }
    }

    @Test func expectContinueWithATooLargeBodyIsRefusedWithoutContinue() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  max_request_body: 10") { proxy in
            let raw = try await proxy.raw(
                "PUT /up HTTP/1.1\r\nHost: {host}\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 413 Payload Too Large"), "\(raw)")
            #expect(proxy.upstream.connectionCount == 0)
        }
    }

    @Test func chunkedRequestBodiesStreamThrough() async throws {
        try await ProxyFixture.with(responder: Responder { .ok("got \($0.bodyBytes)") }) { proxy in
            let raw = try await proxy.raw(
                "POST /c HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
            )
            #expect(raw.hasSuffix("got 11"), "\(raw)")
            #expect(proxy.upstream.requests.first?.bodyText == "hello world")
        }
    }

    @Test func pipelinedRequestsAreAnsweredInOrder() async throws {
        try await ProxyFixture.with(responder: Responder { .ok("\($0.head.uri)=\($0.bodyText)") }) { proxy in
            let raw = try await proxy.raw(
                "POST /a HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1\r\n\r\n1"
                    + "POST /b HTTP/1.1\r\nHost: {host}\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n22\r\n0\r\n\r\n"
                    + "GET /c HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            #expect(raw.components(separatedBy: "HTTP/1.1 200 OK").count == 4, "\(raw)")
            let positions = ["\r\n\r\n/a=1", "\r\n\r\n/b=22", "\r\n\r\n/c="].compactMap {
                raw.range(of: $0)?.lowerBound
            }
            #expect(positions.count == 3 && positions == positions.sorted(), "\(raw)")
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/a", "/b", "/c"])
        }
    }

    /// What a client sends after a request that closes the connection is never parsed, so never
    /// forwarded (llhttp refuses it too): it could only be a request smuggled behind the first.
    @Test func nothingAfterALastRequestIsForwarded() async throws {
        try await ProxyFixture.with(responder: Responder { .ok("\($0.head.uri)") }) { proxy in
            let raw = try await proxy.raw(
                "GET /a HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
                    + "GET /b HTTP/1.1\r\nHost: {host}\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 200 OK") && raw.hasSuffix("/a"), "\(raw)")
            #expect(raw.components(separatedBy: "HTTP/1.1").count == 2, "\(raw)")
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/a"])
        }
    }

    @Test func http10ClientsGetAnHTTP10Answer() async throws {
        try await ProxyFixture.with { proxy in
            let raw = try await proxy.raw("GET /old HTTP/1.0\r\n\r\n")
            #expect(raw.hasPrefix("HTTP/1.0 200 OK"), "\(raw)")
            #expect(raw.hasSuffix("ok"))
        }
    }

    @Test func upstream401IsReportedToTheTokenProviderAndPassedThrough() async throws {
        let tokens = RecordingTokenProvider(token: "rejected-token-1")
        try await ProxyFixture.with(
            tokens: tokens,
            responder: Responder { _ in
                .respond(
                    status: .unauthorized,
                    headers: [("www-authenticate", "Bearer error=\"invalid_token\"")],
                    body: ""
                )
            }
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 401)
            #expect(response.head.headers["www-authenticate"] == ["Bearer error=\"invalid_token\""])
            try await waitUntil { tokens.rejected.map(\.value) == ["rejected-token-1"] }
        }
    }

    @Test func aForbiddenPassesThroughUntouched() async throws {
        let tokens = RecordingTokenProvider(token: "t")
        try await ProxyFixture.with(
            tokens: tokens,
            responder: Responder { _ in .respond(status: .forbidden, headers: [], body: "no") }
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 403 && response.bodyText == "no")
            #expect(tokens.rejected.isEmpty)
        }
    }

    @Test func servesIPv6Loopback() async throws {
        try await ProxyFixture.with(listen: ["[::1]:0"]) { proxy in
            let address = try #require(proxy.listeners.addresses.first)
            #expect(address.bearerdDescription.hasPrefix("[::1]:"))
            let raw = try await RawClient.exchange(
                host: "::1",
                port: address.port!,
                "GET /v6 HTTP/1.1\r\nHost: [::1]:\(address.port!)\r\nConnection: close\r\n\r\n",
                group: proxy.group
            )
            #expect(raw.hasPrefix("HTTP/1.1 200 OK"), "\(raw)")
            #expect(proxy.upstream.requests.first?.head.headers["x-forwarded-for"] == ["::1"])
        }
    }

    /// sun_path holds 107 bytes and a NUL: a `listen: unix:` path of exactly 107 bytes binds,
    /// with its mode, and forwards.
    @Test func servesAUnixSocketAtTheKernelsLongestPath() async throws {
        let directory = try TemporaryDirectory()
        let path = try directory.socketPath(length: 107, named: "proxy.sock")
        try await ProxyFixture.with(yaml: "socket_mode: \"0660\"", listen: ["unix:\(path)"]) { proxy in
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o660)
            let response = try await TestHTTPClient.withConnection(to: .unix(path: path), group: proxy.group) {
                client in
                try await client.send(.GET, "/via-unix")
            }
            #expect(response.status == 200)
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed at shutdown")
    }

    @Test func servesAUnixSocketWithItsModeSetBeforeItAppears() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/proxy.sock"
        try await ProxyFixture.with(yaml: "socket_mode: \"0660\"", listen: ["unix:\(path)"]) { proxy in
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            #expect((attributes[.posixPermissions] as? Int) == 0o660)
            let response = try await TestHTTPClient.withConnection(to: .unix(path: path), group: proxy.group) {
                client in
                try await client.send(.GET, "/via-unix")
            }
            #expect(response.status == 200)
            #expect(proxy.upstream.requests.first?.head.headers["authorization"] == ["Bearer \(ProxyFixture.token)"])
            #expect(!(proxy.upstream.requests.first?.head.headers.contains(name: "x-forwarded-for") ?? true))
        }
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed at shutdown")
    }
}

/// Polls `condition` (yielding between tries) until it holds; fails after `limit` (generous: the
/// whole suite runs at once on two cores in CI, where one test waited more than 5 s).
func waitUntil(limit: Duration = .seconds(20), _ condition: () -> Bool) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while !condition() {
        guard clock.now < deadline else {
            Issue.record("condition not met within \(limit)")
            return
        }
        try await Task.sleep(for: .milliseconds(5))
    }
}
