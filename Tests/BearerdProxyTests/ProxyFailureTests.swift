import BearerdAuth
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

@Suite("Answers bearerd makes itself when something fails")
struct ProxyFailureTests {
    @Test func upstreamDownIs502JSON() async throws {
        let refusing = try RefusingPort()
        let deadPort = refusing.port
        try await ProxyFixture.with(upstreamURL: "http://127.0.0.1:\(deadPort)") { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 502)
            #expect(response.head.headers["content-type"] == ["application/json"])
            #expect(response.bodyText.contains("\"error\":\"upstream_unreachable\""))
            #expect(response.bodyText.contains("cannot reach the upstream http://127.0.0.1:\(deadPort)"))
        }
        withExtendedLifetime(refusing) {}
    }

    @Test func anUpstreamThatDoesNotAcceptIs504AfterTheConnectTimeout() async throws {
        let listener = try SaturatedListener()
        try await ProxyFixture.with(
            upstreamYAML: "connect_timeout: 300ms",
            upstreamURL: "http://127.0.0.1:\(listener.port)"
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 504, "\(response.bodyText)")
            #expect(response.bodyText.contains("connect_timeout (300ms)"))
        }
        withExtendedLifetime(listener) {}
    }

    @Test func upstreamSlowIs504() async throws {
        try await ProxyFixture.with(
            upstreamYAML: "response_timeout: 200ms",
            responder: Responder { _ in .delayed(.seconds(30), .ok()) }
        ) { proxy in
            let response = try await proxy.send(.GET, "/slow")
            #expect(response.status == 504)
            #expect(response.bodyText.contains("\"error\":\"upstream_timeout\""))
            #expect(response.bodyText.contains("response_timeout (200ms)"))
        }
    }

    static let patientTokenWait = "proxy:\n  token_wait: 60s"

    @Test func noTokenIs503SayingToLogIn() async throws {
        let tokens = RecordingTokenProvider(token: nil)
        // The provider answers at once; a loaded CI machine may still take seconds to run it,
        // and the answer, not proxy.token_wait's, is what is checked.
        try await ProxyFixture.with(yaml: Self.patientTokenWait, tokens: tokens) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 503)
            #expect(response.bodyText.contains("\"error\":\"not_logged_in\""))
            #expect(response.bodyText.contains("run `bearerd login`"))
            #expect(proxy.upstream.connectionCount == 0)
        }
    }

    @Test func tokenServerTroubleIs503WithRetryAfter() async throws {
        let tokens = RecordingTokenProvider(
            token: nil,
            error: .tokenServerUnavailable("the token server is unreachable; retrying", retryAfterSeconds: 7)
        )
        try await ProxyFixture.with(yaml: Self.patientTokenWait, tokens: tokens) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 503)
            #expect(response.head.headers["retry-after"] == ["7"])
        }
    }

    @Test func aPooledConnectionClosedByTheUpstreamIsReplacedTransparently() async throws {
        // The upstream drops the reused connection the moment the second request arrives, as a
        // server whose keep-alive timeout just ran out would: the bodyless request is replayed once
        // on a new connection and the client never notices.
        let dropped = Mutex(false)
        try await ProxyFixture.with(
            responder: Responder { request in
                if request.head.uri == "/2" && !dropped.withLock({ $0 }) {
                    dropped.withLock { $0 = true }
                    return .close
                }
                return .ok()
            }
        ) { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                let first = try await client.send(.GET, "/1")
                #expect(first.status == 200)
                let second = try await client.send(.GET, "/2")
                #expect(second.status == 200)
            }
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/1", "/2", "/2"])
            #expect(proxy.upstream.connectionCount == 2)
        }
    }

    @Test func aRequestWithABodyIsNotReplayed() async throws {
        try await ProxyFixture.with(responder: Responder { request in request.head.uri == "/post" ? .close : .ok() }) {
            proxy in
            let response = try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                client in
                _ = try await client.send(.GET, "/warm")
                return try await client.send(.POST, "/post", text: "once")
            }
            #expect(response.status == 502)
            #expect(proxy.upstream.requests.filter { $0.head.uri == "/post" }.count == 1)
        }
    }
}
