import BearerdAuth
import BearerdTestSupport
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import Testing

@Suite("Logs")
struct ProxyLoggingTests {
    @Test func oneAccessLineWithoutTheQuery() async throws {
        try await ProxyFixture.with(responder: Responder { _ in .ok("12345") }) { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                _ = try await client.send(.POST, "/items?api_key=shh", text: "abc")
            }
            let lines = proxy.logs.entries.filter { $0.message == "request" }
            #expect(lines.count == 1)
            let metadata = try #require(lines.first?.metadata)
            #expect(metadata["method"]?.description == "POST")
            #expect(metadata["path"]?.description == "/items")
            #expect(metadata["status"]?.description == "200")
            #expect(metadata["bytes_in"]?.description == "3")
            #expect(metadata["bytes_out"]?.description == "5")
            #expect(metadata["duration_ms"] != nil && metadata["upstream_ms"] != nil)
            #expect(!proxy.logText.contains("shh"))
        }
    }

    @Test func theTokenNeverAppearsInTheLogs() async throws {
        // A full run at trace level through every path that logs: success, upstream 401 (which
        // re-reads the token file), 5xx from the upstream, a refused request, a malformed one.
        try await ProxyFixture.with(
            responder: Responder { request in
                switch request.head.uri {
                case "/401": .respond(status: .unauthorized, headers: [], body: "")
                case "/500": .respond(status: .internalServerError, headers: [], body: "")
                default: .ok()
                }
            }
        ) { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                for path in ["/ok", "/401", "/500", "/ok?x=1"] {
                    _ = try await client.send(
                        .GET,
                        path,
                        headers: ["authorization": "Bearer \(ProxyFixture.token)"]
                    )
                }
            }
            _ = try await proxy.raw("GET http://user:hunter2@evil/ HTTP/1.1\r\nHost: evil\r\nConnection: close\r\n\r\n")
            _ = try await proxy.raw("BROKEN\r\n\r\n")
            try await waitUntil { proxy.logText.contains("upstream rejected the static token") }
            let text = proxy.logText
            #expect(!text.isEmpty)
            #expect(!text.contains(ProxyFixture.token))
            #expect(!text.lowercased().contains("bearer "))
            #expect(!text.contains("hunter2"), "a refused absolute-form target's credentials were logged")
        }
    }

    @Test func aTokenInterpolatedAnywhereIsRedacted() {
        let token = BearerToken("very-secret-value")
        #expect(!"\(token)".contains("very-secret-value"))
        #expect(!String(reflecting: token).contains("very-secret-value"))
        let error = TokenUnavailableError.notLoggedIn()
        #expect(!"\(error)".isEmpty)
    }
}
