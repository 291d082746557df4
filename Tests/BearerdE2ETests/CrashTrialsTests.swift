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

/// kill -9 at random moments while bearerd refreshes under load, against django-oauth-toolkit
/// with 3 s tokens, refresh-token rotation and reuse protection. DOT holds each token answer for
/// 300 ms after it has rotated the refresh token, and notes when each token request arrives; the
/// test kills bearerd at a random moment of that window — the server has a new refresh token that
/// bearerd will never receive — then starts it again on its store.
///
/// DOT runs with a 10 s grace period for the previous refresh token (as Auth0 and Okta
/// deployments do): with none, no client can survive a crash in that window, since the only
/// refresh token it has was already used. bearerd's part is to have the refresh-in-flight mark on
/// disk before the token leaves, and to resend at once on the next start, inside the grace period.
/// `BEARERD_CRASH_GRACE=0` runs the same trials without a grace period and reports the losses
/// instead of failing on them; `BEARERD_CRASH_TRIALS` sets the number of trials (default 24).
@Suite(
    "kill -9 during refreshes, against django-oauth-toolkit",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(5))
)
struct CrashTrialsTests {
    static let environment = ProcessInfo.processInfo.environment
    static let trials = Int(environment["BEARERD_CRASH_TRIALS"] ?? "") ?? 24
    static let grace = Int(environment["BEARERD_CRASH_GRACE"] ?? "") ?? 10
    static let windowMS = 300

    @Test func killedWhileRefreshingItAlwaysContinuesWithoutANewLogin() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let directory = try TemporaryDirectory()
        let marks = directory.path + "/token-requests"
        let server = try await OAuthServer.start(
            ttl: 3,
            options: ["--grace", "\(Self.grace)", "--token-delay", "\(Self.windowMS)", "--token-marks", marks]
        )
        defer { try? FileManager.default.removeItem(atPath: marks) }
        do {
            try await self.trials(server, directory: directory, marks: marks, group: group)
        } catch {
            try? await server.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await server.stop()
        try await group.shutdownGracefully()
    }

    func trials(
        _ server: OAuthServer,
        directory: TemporaryDirectory,
        marks: String,
        group: any EventLoopGroup
    ) async throws {
        #expect(try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"]).status == 0)
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(server.baseURL)
            auth:
              token_url: \(server.tokenURL)
              client_id: pw-client
              client_secret_file: \(try directory.write("pw-secret\n", to: "secret"))
            store:
              path: \(directory.path)/tokens.store
              key_file: \(directory.path)/store.key
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            # Requests may wait for the refresh a restarted daemon runs at once (slowed here by
            # --token-delay and the parallel suite); at the default token_wait (2 s) they would
            # get 503 with Retry-After (41 in one run). The fail-fast bound is OutageTests'.
            proxy:
              token_wait: 10s
            """,
            to: "bearerd.yaml"
        )
        let login = try await BearerdProcess.run(
            ["login", "-c", config, "--username", "alice", "--password-stdin"],
            input: "alice-pass\n"
        )
        try #require(login.status == 0, "\(login.stderr)")

        var kills: [Int] = []
        var lost = 0
        var answers = 0
        var failures: [Int: Int] = [:]
        for trial in 1...Self.trials + 1 {
            let bearerd = try BearerdProcess(["serve", "--config", config])
            try await bearerd.waitUntilReady()
            let port = try #require(bearerd.proxyPort)
            let statuses = StatusCounts()
            let load = Self.load(port: port, group: group, statuses: statuses)
            // It continues: its first refresh succeeds (after a kill, at once: the store says a
            // refresh was in flight) and requests are answered 200, with no new login.
            let served: Bool
            do {
                try await waitUntil(.seconds(15)) {
                    bearerd.stderr.contains("msg=\"token refreshed\"") || bearerd.stderr.contains("rejected")
                }
                let before = statuses.counts.withLock { $0[200, default: 0] }
                try await waitUntil(.seconds(15)) {
                    bearerd.stderr.contains("rejected") || statuses.counts.withLock { $0[200, default: 0] } > before
                }
                served = !bearerd.stderr.contains("rejected")
            } catch {
                served = false
            }
            if !served {
                lost += 1
                Self.log("trial \(trial): the session was lost; logging in again through the daemon")
                let again = try await BearerdProcess.run(
                    ["login", "-c", config, "--username", "alice", "--password-stdin"],
                    input: "alice-pass\n"
                )
                try #require(again.status == 0, "\(again.stderr)")
            }
            if trial > Self.trials {
                bearerd.signal(SIGTERM)
                #expect(try await bearerd.wait() == 0)
                load.cancel()
                _ = await load.value
                self.tally(statuses, into: &answers, &failures)
                break
            }
            // The next token request reaches DOT: kill inside its window.
            let before = Self.lines(marks)
            try await waitUntil(.seconds(15)) { Self.lines(marks) > before }
            let offset = Int.random(in: 0...Self.windowMS)
            try await Task.sleep(for: .milliseconds(offset))
            bearerd.signal(SIGKILL)
            _ = try await bearerd.wait()
            kills.append(offset)
            load.cancel()
            _ = await load.value
            self.tally(statuses, into: &answers, &failures)
        }
        Self.log(
            "\(kills.count) kill -9 trials (grace \(Self.grace) s), each \(kills.min() ?? 0)-\(kills.max() ?? 0) ms into a token answer's window: \(lost) lost the session; \(answers) answers 2xx, other statuses \(failures)"
        )
        #expect(kills.count == Self.trials)
        if Self.grace > 0 {
            #expect(lost == 0, "a crash lost the session")
            #expect(failures.isEmpty, "answers other than 2xx: \(failures)")
        }
    }

    func tally(_ statuses: StatusCounts, into answers: inout Int, _ failures: inout [Int: Int]) {
        for (status, count) in statuses.counts.withLock({ $0 }) {
            if (200..<300).contains(status) { answers += count } else { failures[status, default: 0] += count }
        }
    }

    /// Eight kept-alive clients until cancelled or the daemon dies.
    static func load(port: Int, group: any EventLoopGroup, statuses: StatusCounts) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { tasks in
                for _ in 0..<8 {
                    tasks.addTask {
                        _ = try? await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                            while !Task.isCancelled {
                                let response = try await client.send(.GET, "/api/hello")
                                statuses.counts.withLock { $0[response.status, default: 0] += 1 }
                            }
                        }
                    }
                }
            }
        }
    }

    static func lines(_ path: String) -> Int {
        (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").count ?? 0
    }

    static func log(_ text: String) {
        FileHandle.standardError.write(Data("crash trials: \(text)\n".utf8))
    }
}
