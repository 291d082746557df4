import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// `auth.discover`, the real binaries against django-oauth-toolkit: its API names its
/// authorization server (RFC 9728), which registers clients (RFC 7591). The config holds nothing
/// but the API's URL.
@Suite(
    "Discovery from the API end to end",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct DiscoveryEndToEndTests {
    @Test func nothingButTheAPIsURLThenALoginAndRequestsServedAcrossARestart() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let directory = try TemporaryDirectory()
        #expect(try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"]).status == 0)
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(server.baseURL)
            auth:
              discover: true
            store:
              path: \(directory.path)/tokens.store
              key_file: \(directory.path)/store.key
            admin:
              socket: \(directory.path)/admin.sock
            """,
            to: "bearerd.yaml"
        )
        let check = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        #expect(
            check.stdout.contains("auth.discover: authorization_server (RFC 9728) \(server.baseURL)/o"),
            "\(check.stdout)"
        )
        #expect(check.stdout.contains("registration_endpoint"), "\(check.stdout)")

        var daemon = try BearerdProcess(["serve", "--config", config])
        try await daemon.waitUntilReady()
        let script = ProjectScript.repository.appendingPathComponent("scripts/peers/browser/browser.py").path
        let login = try await BearerdProcess.run(
            ["login", "--config", config],
            environment: ["BROWSER": "python3 \(script) --log \(directory.path)/browser.log %s"]
        )
        #expect(login.status == 0, "\(login.stderr)")
        #expect(login.stderr.contains("&resource=http%3A%2F%2F127.0.0.1%3A\(server.port)\n"), "\(login.stderr)")
        let status = try await BearerdProcess.run(["status", "--config", config]).stdout
        #expect(status.contains("registered by bearerd (RFC 7591)"), "\(status)")
        let client = try #require(status.split(separator: "client ").last?.split(separator: " ").first)
        #expect(try await Self.hello(try #require(daemon.proxyPort)) == 200)

        // A restart keeps the registered client and the session.
        daemon.signal(SIGTERM)
        _ = try await daemon.wait()
        daemon = try BearerdProcess(["serve", "--config", config])
        try await daemon.waitUntilReady()
        #expect(try await Self.hello(try #require(daemon.proxyPort)) == 200)
        let after = try await BearerdProcess.run(["status", "--config", config]).stdout
        #expect(after.contains("client \(client) registered"), "\(after)")
        daemon.signal(SIGTERM)
        _ = try await daemon.wait()
        try await server.stop()
    }

    static func hello(_ port: Int) async throws -> Int {
        let response = try await TestHTTPClient.withConnection(
            to: .tcp(port: port),
            group: MultiThreadedEventLoopGroup.singleton
        ) { client in
            try await client.send(.GET, "/api/hello")
        }
        return response.status
    }
}
