import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Once `bearerd reload` says the new config is live, no request is forwarded under the old one,
/// on connections opened before it too: a held keep-alive connection is closed, so the request
/// sent on it next reaches neither the old upstream nor anything under the old lists, and a
/// request in flight finishes, then its connection closes.
@Suite("A reload binds the connections already open", .serialized, .timeLimit(.minutes(3)))
struct ReloadBindsOpenConnectionsTests {
    /// A config change, and the request that the new config must not forward to the old upstream.
    struct Change: Sendable, CustomTestStringConvertible {
        var name: String
        var yaml: String
        var method: HTTPMethod
        var path: String
        /// The first upstream moves to the second.
        var movesUpstream = false

        var testDescription: String { self.name }
    }

    static let changes: [Change] = [
        Change(name: "deny_paths", yaml: "proxy:\n  deny_paths: [\"/admin\"]\n", method: .GET, path: "/admin/secret"),
        Change(name: "deny_methods", yaml: "proxy:\n  deny_methods: [DELETE]\n", method: .DELETE, path: "/x"),
        Change(name: "allow_paths", yaml: "proxy:\n  allow_paths: [\"/public\"]\n", method: .GET, path: "/private"),
        Change(name: "socket_allow_uids", yaml: "socket_allow_uids: [12345]\n", method: .GET, path: "/x"),
        Change(name: "upstream.url", yaml: "", method: .GET, path: "/x", movesUpstream: true),
    ]

    static func config(upstream: Int, directory: TemporaryDirectory, token: String, extra: String = "") -> String {
        """
        listen: ["127.0.0.1:0"]
        upstream:
          url: http://127.0.0.1:\(upstream)
        auth:
          static_token_file: \(token)
        admin:
          socket: \(directory.path)/admin.sock
        log:
          access: false
        \(extra)
        """
    }

    @Test(arguments: changes)
    func aHeldConnectionForwardsNothingUnderTheOldConfig(change: Change) async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("reload-token-4711\n", to: "token")
        let path = try directory.write(
            Self.config(upstream: first.port, directory: directory, token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)

        let outcome: Result<TestHTTPResponse, any Error> = try await TestHTTPClient.withConnection(
            to: .tcp(port: port),
            group: group
        ) { client in
            let before = try await client.send(.GET, "/warm")
            #expect(before.status == 200 && before.bodyText == "first")
            _ = try directory.write(
                Self.config(
                    upstream: change.movesUpstream ? second.port : first.port,
                    directory: directory,
                    token: token,
                    extra: change.yaml
                ),
                to: "b.yaml"
            )
            let reload = try await BearerdProcess.run(["reload", "-c", path])
            #expect(reload.status == 0, "\(reload.stderr)")
            #expect(reload.stdout.contains("the new config is live"), "\(reload.stdout)")
            // Whatever the client does next on the connection it held.
            do {
                return .success(try await client.send(change.method, change.path))
            } catch {
                return .failure(error)
            }
        }
        let old = first.requests.map(\.head.uri)
        #expect(old == ["/warm"], "the old upstream got \(old) after the reload (\(change.name))")
        if case .success(let response) = outcome {
            #expect(response.status != 200 || response.bodyText != "first", "\(response.status) \(response.bodyText)")
        }
        // A new connection meets the new config.
        let fresh: TestHTTPResponse? = try? await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
            try await $0.send(change.method, change.path)
        }
        switch change.name {
        case "socket_allow_uids": #expect(fresh == nil, "a caller no longer listed was served")
        case "upstream.url": #expect(fresh?.bodyText == "second")
        default: #expect(fresh?.status == 403 || fresh?.status == 405, "\(String(describing: fresh?.status))")
        }
        #expect(first.requests.count == 1)
        await first.stop()
        await second.stop()
    }

    /// A request in flight when the reload comes is answered, and its connection closes after it.
    @Test func aRequestInFlightFinishesThenItsConnectionCloses() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let upstream = try await TestUpstream.start(group: group) { request in
            request.head.uri == "/slow" ? .delayed(.milliseconds(1500), .ok("slow")) : .ok("fast")
        }
        let directory = try TemporaryDirectory()
        let token = try directory.write("reload-token-4711\n", to: "token")
        let path = try directory.write(
            Self.config(upstream: upstream.port, directory: directory, token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let reloader = Task {
                try await waitUntil { upstream.requests.count == 1 }
                _ = try directory.write(
                    Self.config(
                        upstream: upstream.port,
                        directory: directory,
                        token: token,
                        extra: "proxy:\n  deny_paths: [\"/fast\"]\n"
                    ),
                    to: "b.yaml"
                )
                return try await BearerdProcess.run(["reload", "-c", path])
            }
            let answer = try await client.send(.GET, "/slow")
            let reload = try await reloader.value
            #expect(reload.status == 0, "\(reload.stderr)")
            #expect(answer.status == 200 && answer.bodyText == "slow")
            #expect(answer.head.headers["connection"].first?.lowercased() == "close", "\(answer.head.headers)")
            let next = try? await client.send(.GET, "/fast")
            #expect(next == nil || next?.status == 403, "\(String(describing: next?.status))")
        }
        #expect(upstream.requests.map(\.head.uri) == ["/slow"])
        await upstream.stop()
    }

    /// A WebSocket spliced before the reload: once the new lists no longer admit its caller, it
    /// is closed too (a spliced connection carries bytes, not requests, so nothing else would).
    @Test func aSplicedUpgradeOfACallerNoLongerAdmittedIsClosed() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        // RFC 6455 §1.3's sample key and its accept value.
        let upstream = try await ScriptedUpstream(
            group: group,
            response:
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n"
        )
        let directory = try TemporaryDirectory()
        let token = try directory.write("reload-token-4711\n", to: "token")
        let path = try directory.write(
            Self.config(upstream: upstream.port, directory: directory, token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)

        let socket = LoopbackSocket.silentConnection(to: port)
        defer { close(socket) }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let handshake =
            "GET /chat HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        _ = handshake.withCString { send(socket, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = recv(socket, &buffer, buffer.count, 0)
        let answer = String(decoding: buffer[..<max(count, 0)], as: UTF8.self)
        try #require(answer.hasPrefix("HTTP/1.1 101 "), "\(answer)")

        _ = try directory.write(
            Self.config(
                upstream: upstream.port,
                directory: directory,
                token: token,
                extra: "socket_allow_uids: [12345]\n"
            ),
            to: "b.yaml"
        )
        let reload = try await BearerdProcess.run(["reload", "-c", path])
        #expect(reload.status == 0, "\(reload.stderr)")
        // The spliced connection ends: a read returns end of file (or a reset), not a timeout.
        let after = recv(socket, &buffer, buffer.count, 0)
        #expect(
            after == 0 || (after < 0 && errno == ECONNRESET),
            "read \(after) bytes (errno \(errno)) after the reload"
        )
        await upstream.stop()
    }
}
