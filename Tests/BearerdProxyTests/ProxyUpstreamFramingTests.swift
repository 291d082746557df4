import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@Suite("Upstream responses bearerd parses itself")
struct ProxyUpstreamFramingTests {
    /// A proxy in front of an upstream that answers every request with `response`.
    func withScripted<Result: Sendable>(
        _ response: String,
        close: Bool = false,
        upstreamYAML: String = "",
        _ body: (ProxyFixture, ScriptedUpstream) async throws -> Result
    ) async throws -> Result {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await ScriptedUpstream(group: group, response: response, close: close)
        do {
            let result = try await ProxyFixture.with(
                upstreamYAML: upstreamYAML,
                upstreamURL: "http://127.0.0.1:\(upstream.port)"
            ) { proxy in
                try await body(proxy, upstream)
            }
            await upstream.stop()
            try await group.shutdownGracefully()
            return result
        } catch {
            await upstream.stop()
            try? await group.shutdownGracefully()
            throw error
        }
    }

    static let chunked =
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n"
        + "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nX-Checksum: 42\r\n\r\n"

    @Test func aMalformedUpstreamResponseIs502() async throws {
        let smuggling = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
        try await self.withScripted(smuggling) { proxy, _ in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 502)
            #expect(response.bodyText.contains("\"error\":\"upstream_failed\""))
            #expect(response.bodyText.contains("both Transfer-Encoding and Content-Length"), "\(response.bodyText)")
        }
    }

    /// `Connection: content-length` names the length as hop-by-hop; dropping it while the body
    /// stays length-framed would leave the client to read a body of unknown end, and the next
    /// response on the connection as part of it.
    @Test func aConnectionHeaderCannotStripTheResponseLength() async throws {
        let response =
            "HTTP/1.1 200 OK\r\nConnection: content-length, X-Hop\r\nX-Hop: 1\r\nContent-Length: 5\r\n\r\nhello"
        try await self.withScripted(response) { proxy, _ in
            let raw = try await proxy.raw(
                "GET /x HTTP/1.1\r\nHost: {host}\r\n\r\nGET /y HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            let heads = raw.components(separatedBy: "HTTP/1.1 200 OK\r\n")
            #expect(heads.count == 3, "two whole responses: \(raw)")
            for head in heads.dropFirst() {
                #expect(head.lowercased().contains("content-length: 5\r\n"), "\(head)")
                #expect(!head.lowercased().contains("x-hop"))
            }
        }
    }

    /// An upstream that sends a head and part of the body, then nothing: the exchange used to
    /// hold the client's slot and the upstream connection forever.
    @Test func aResponseBodyThatStopsComingEndsAtTheReadTimeout() async throws {
        let stalling = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nabc"
        try await self.withScripted(stalling, upstreamYAML: "read_timeout: 300ms") { proxy, _ in
            let started = ContinuousClock.now
            let answer = try await proxy.raw("GET /x HTTP/1.1\r\nHost: {host}\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 ") && answer.hasSuffix("abc"), "\(answer)")
            // It hung before; the bound leaves room for a loaded machine.
            #expect(ContinuousClock.now - started < .seconds(30))
            #expect(proxy.logText.contains("upstream.read_timeout"))
        }
    }

    @Test func aChunkedResponseReachesAnHTTP11ClientRechunkedWithoutTrailers() async throws {
        try await self.withScripted(Self.chunked) { proxy, _ in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 200)
            #expect(response.bodyText == "hello, world")
            #expect(response.head.headers["transfer-encoding"] == ["chunked"])
            #expect(!response.head.headers.contains(name: "trailer"))
            #expect(!response.head.headers.contains(name: "x-checksum"))
        }
    }

    @Test func aChunkedResponseReachesAnHTTP10ClientAsABodyEndedByTheClose() async throws {
        try await self.withScripted(Self.chunked) { proxy, _ in
            let answer = try await proxy.raw("GET /x HTTP/1.0\r\nHost: {host}\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.0 200 OK\r\n"), "\(answer)")
            #expect(answer.lowercased().contains("connection: close\r\n"))
            #expect(!answer.lowercased().contains("transfer-encoding"))
            #expect(answer.hasSuffix("\r\n\r\nhello, world"), "\(answer)")
        }
    }

    @Test func aBodyThatEndsWithTheUpstreamConnectionKeepsTheClientConnection() async throws {
        try await self.withScripted("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the close", close: true) {
            proxy,
            upstream in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                for _ in 0..<2 {
                    let response = try await client.send(.GET, "/x")
                    #expect(response.status == 200)
                    #expect(response.bodyText == "until the close")
                    #expect(response.head.headers["transfer-encoding"] == ["chunked"])
                }
            }
            #expect(upstream.connectionCount == 2, "a connection whose body ended with it is not reused")
        }
    }

    @Test func informationalResponsesFromTheUpstreamAreNotForwarded() async throws {
        let response =
            "HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
        try await self.withScripted(response) { proxy, _ in
            let answer = try await proxy.raw("GET /x HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer)")
            #expect(answer.hasSuffix("\r\n\r\nok"))
        }
    }

    @Test func aBodylessPOSTIsNotReplayedOnAStaleConnection() async throws {
        // The upstream may have acted on a POST before closing: only idempotent requests replay.
        try await ProxyFixture.with(responder: Responder { request in request.head.uri == "/post" ? .close : .ok() }) {
            proxy in
            let response = try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                client in
                _ = try await client.send(.GET, "/warm")
                return try await client.send(.POST, "/post")
            }
            #expect(response.status == 502)
            #expect(proxy.upstream.requests.filter { $0.head.uri == "/post" }.count == 1)
        }
    }
}
