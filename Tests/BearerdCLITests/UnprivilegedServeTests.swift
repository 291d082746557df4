import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// bearerd as the unprivileged user it is under systemd (`DynamicUser=`), not as the root the
/// test runs as: a privileged socket option passed off as an ordinary one failed every
/// connection there (`SO_DEBUG` instead of `TCP_NODELAY`) and nowhere else.
@Suite("serve as an unprivileged user", .serialized, .timeLimit(.minutes(1)))
struct UnprivilegedServeTests {
    static let nobody: uid_t = 65534

    @Test(.enabled(if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")))
    func requestsGoThroughAsNobody() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await TestUpstream.start(group: group)
        let directory = try TemporaryDirectory()
        let token = try directory.write("unprivileged-token-42\n", to: "token")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream.port)
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/run/admin.sock
            """,
            to: "b.yaml",
            mode: 0o644
        )
        // The directory and the token become nobody's, as StateDirectory= and a credential are
        // the dynamic user's.
        for path in [directory.path, token] { chown(path, Self.nobody, gid_t(Self.nobody)) }
        chmod(directory.path, 0o755)
        let bearerd = try BearerdProcess(
            program: "/usr/bin/setpriv",
            [
                "--reuid=\(Self.nobody)", "--regid=\(Self.nobody)", "--clear-groups",
                BearerdProcess.executable, "serve", "-c", config,
            ]
        )
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        for _ in 0..<3 {
            let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                try await client.send(.GET, "/as-nobody")
            }
            #expect(answer.status == 200, "\(bearerd.stderr)")
        }
        #expect(upstream.requests.last?.head.headers["authorization"] == ["Bearer unprivileged-token-42"])
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await upstream.stop()
        try await group.shutdownGracefully()
    }
}
