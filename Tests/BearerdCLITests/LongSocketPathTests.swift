import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// sun_path holds 107 bytes and a NUL: `serve` listens on a proxy socket and an admin socket of
/// exactly 107 bytes, and the verbs reach the daemon through the admin socket.
@Suite("Socket paths as long as the kernel allows", .timeLimit(.minutes(1)))
struct LongSocketPathTests {
    @Test func serveAndStatusWorkAtTheLongestPath() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await TestUpstream.start(group: group)
        let directory = try TemporaryDirectory()
        let token = try directory.write("long-path-token-81\n", to: "token")
        let proxy = try directory.socketPath(length: 107, named: "proxy.sock")
        let admin = try directory.socketPath(length: 107, named: "admin.sock")
        let config = try directory.write(
            """
            listen: ["unix:\(proxy)"]
            upstream:
              url: http://127.0.0.1:\(upstream.port)
            auth:
              static_token_file: \(token)
            admin:
              socket: \(admin)
            """,
            to: "b.yaml"
        )
        let check = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(check.status == 0, "\(check.stderr)")
        let bearerd = try BearerdProcess(["serve", "-c", config])
        try await bearerd.waitUntilReady()
        let answer = try await TestHTTPClient.withConnection(to: .unix(path: proxy), group: group) { client in
            try await client.send(.GET, "/via-unix")
        }
        #expect(answer.status == 200)
        let status = try await BearerdProcess.run(["status", "-c", config])
        #expect(status.status == 0 && status.stdout.contains("running (admin socket \(admin))"), "\(status)")
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await upstream.stop()
        try await group.shutdownGracefully()
    }
}
