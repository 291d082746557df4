import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// bearerd, the real binary, in front of django-oauth-toolkit with 5 s access tokens, refresh-token
/// rotation and reuse protection (a refresh token sent twice revokes the whole family, which
/// would show up as 401s). Set BEARERD_SKIP_E2E=1 to skip it in a quick local run.
@Suite(
    "End to end against django-oauth-toolkit",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(5))
)
struct OAuthEndToEndTests {
    static let clients = 200
    static let duration = Duration.seconds(60)

    @Test func twoHundredClientsForAMinuteThenAnOutageWithoutANewLogin() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let server = try await OAuthServer.start(ttl: 5)
        do {
            try await self.exercise(server, group: group)
        } catch {
            try? await server.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await server.stop()
        try await group.shutdownGracefully()
    }

    func exercise(_ server: OAuthServer, group: any EventLoopGroup) async throws {
        Self.log("token server up on \(server.baseURL)")
        let seed = try await server.passwordLogin(group: group)
        Self.log("logged in")

        let directory = try TemporaryDirectory()
        let keygen = try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(server.baseURL)
            auth:
              token_url: \(server.tokenURL)
              client_id: pw-client
              client_secret_file: \(try directory.write("pw-secret\n", to: "secret"))
              refresh_token_file: \(try directory.write(seed + "\n", to: "seed"))
            store:
              path: \(directory.path)/tokens.store
              key_file: \(directory.path)/store.key
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            # This trial measures rotation and reuse under load, with a token server that the
            # parallel suite can slow past 2 s per refresh of a 3 s token; at the default
            # token_wait (2 s) such a refresh answers the requests that wait for it 503 with
            # Retry-After (144 of 8,037 in one run). The fail-fast bound is OutageTests' to
            # measure; here requests may wait for the refresh, as they always could.
            proxy:
              token_wait: 10s
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "--config", config])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        Self.log("bearerd listening on \(port); \(Self.clients) clients for \(Self.duration)")

        // 1. Load across many expiries: every answer 2xx.
        let statuses = StatusCounts()
        let clock = ContinuousClock()
        let deadline = clock.now + Self.duration
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<Self.clients {
                tasks.addTask {
                    try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                        while clock.now < deadline {
                            let response = try await client.send(.GET, "/api/hello")
                            statuses.counts.withLock { $0[response.status, default: 0] += 1 }
                        }
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let counts = statuses.counts.withLock { $0 }
        let total = counts.values.reduce(0, +)
        let refreshes = bearerd.stderr.components(separatedBy: "msg=\"token refreshed\"").count - 1
        Self.log("\(total) requests in \(Self.duration), statuses \(counts), \(refreshes) refreshes")
        #expect(counts.keys.allSatisfy { (200..<300).contains($0) }, "non-2xx answers: \(counts)")
        if counts.keys.contains(where: { !(200..<300).contains($0) }) {
            let notable = bearerd.stderr.split(separator: "\n").filter { !$0.contains("level=info") }
            Self.log("bearerd's warnings:\n" + notable.suffix(40).joined(separator: "\n"))
        }
        #expect(total > 1000)
        #expect(refreshes >= 10, "fewer than 10 token lifetimes covered")
        #expect(!bearerd.stderr.contains("rejected"), "a refresh was rejected: reuse revoked the family?")

        Self.log("stopping the token server")
        // 2. The token server goes away for 35 s, far longer than a token lives, while clients
        // keep calling: 503 with Retry-After, and the failures build a long backoff.
        try await server.stop()
        let linesBefore = bearerd.stderr.split(separator: "\n").count
        let outageEnds = clock.now + .seconds(35)
        let during = StatusCounts()
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<10 {
                tasks.addTask {
                    while clock.now < outageEnds {
                        let status = try await self.get(port: port, group: group).status
                        during.counts.withLock { $0[status, default: 0] += 1 }
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
            try await tasks.waitForAll()
        }
        // The journal is not flooded: under about one warning a second, whatever the request rate.
        let warnings = bearerd.stderr.split(separator: "\n").dropFirst(linesBefore)
            .filter { $0.contains("level=warning") || $0.contains("level=error") }
        Self.log("during the outage: \(during.counts.withLock { $0 }), \(warnings.count) warnings in 35 s")
        #expect(warnings.count < 35, "\(warnings.count) warning lines in 35 s:\n\(warnings.joined(separator: "\n"))")
        let down = try await self.get(port: port, group: group)
        #expect(down.status == 503, "\(down.status) \(down.bodyText)")
        #expect(down.head.headers["retry-after"].first.flatMap(Int.init).map { $0 <= 3 } == true)
        #expect(down.bodyText.contains("token_server_unavailable"))

        // 3. It comes back: requests succeed again within a probe interval (3 s) and a refresh,
        // with no new login. Before, the backoff after seven failures kept it at 503 for 40 s.
        Self.log("starting the token server again")
        try await server.start()
        let back = clock.now
        try await waitUntil(.seconds(60), every: .milliseconds(100)) {
            (try? await self.get(port: port, group: group).status) == 200
        }
        let recovery = clock.now - back
        Self.log("service back \(recovery) after the token server")
        #expect(recovery < .seconds(5), "service came back \(recovery) after the token server")

        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        let logs = bearerd.stderr
        #expect(!logs.contains(seed) && !logs.contains("pw-secret"), "a secret reached the logs")

        // 4. A restart continues from the encrypted store: the seed's refresh token was rotated
        // long ago (sending it again would revoke the session), and no new login is needed.
        Self.log("restarting bearerd on its encrypted store")
        let restarted = try BearerdProcess(["serve", "--config", config])
        try await restarted.waitUntilReady()
        let newPort = try #require(restarted.proxyPort)
        try await waitUntil(.seconds(30), every: .milliseconds(200)) {
            (try? await self.get(port: newPort, group: group).status) == 200
        }
        restarted.signal(SIGTERM)
        #expect(try await restarted.wait() == 0)
        #expect(!restarted.stderr.contains("rejected"), "the restart reused a refresh token")
    }

    static func log(_ text: String) {
        FileHandle.standardError.write(Data("e2e: \(text)\n".utf8))
    }

    func get(port: Int, group: any EventLoopGroup) async throws -> TestHTTPResponse {
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            try await client.send(.GET, "/api/hello")
        }
    }

}

final class StatusCounts: Sendable {
    let counts = Mutex<[Int: Int]>([:])
}
