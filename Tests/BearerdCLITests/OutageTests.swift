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

/// The token server goes away while clients keep calling: every answer comes fast (a 503 with
/// a Retry-After once the token has expired), never after a wait for a refresh that cannot work.
/// Before, a refused token endpoint cost each refresh the whole auth.request_timeout
/// (async-http-client retried the connect), and clients got no answer for ~36 s of 43.
@Suite("Token server outage", .serialized, .timeLimit(.minutes(2)))
struct OutageTests {
    @Test func everyAnswerComesWithinTokenWaitWhileTheTokenServerIsDown() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // The token server's own loop: shutting it down ends its kept-alive connections too, as
        // a real outage does (closing only its listener left bearerd refreshing over one).
        let oauthGroup = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let oauth = try await FakeOAuthServer.start(group: oauthGroup, lifetime: 2)
        let upstream = try await TestUpstream.start(group: group) { _ in .ok() }
        let directory = try TemporaryDirectory()
        var config = try SessionVerbTests.config(directory, oauth: oauth, upstream: upstream.port)
        config = try directory.write(
            try String(contentsOfFile: config, encoding: .utf8)
                + "\nproxy:\n  token_wait: 500ms\nlog:\n  access: false\n",
            to: "outage.yaml"
        )
        let login = try await BearerdProcess.run(
            ["login", "-c", config, "--username", "alice", "--password-stdin"],
            input: "alice-pass\n"
        )
        try #require(login.status == 0, "\(login.stderr)")
        let bearerd = try BearerdProcess(["serve", "-c", config])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        await oauth.stop()
        try await oauthGroup.shutdownGracefully()

        // 30 s of traffic from 4 clients: the token (2 s) expires early on and cannot be renewed.
        let tally = Tally()
        let end = ContinuousClock.now + .seconds(30)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<4 {
                tasks.addTask {
                    while ContinuousClock.now < end {
                        let started = ContinuousClock.now
                        let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
                            client in try await client.send(.GET, "/during-outage")
                        }
                        let took = ContinuousClock.now - started
                        tally.durations.withLock { $0.append(took) }
                        tally.statuses.withLock { $0[answer.status, default: 0] += 1 }
                        if let value = answer.head.headers["retry-after"].first {
                            tally.retryAfters.withLock { _ = $0.insert(value) }
                        }
                        try await Task.sleep(for: .milliseconds(50))
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let counts = tally.statuses.withLock { $0 }
        let durations = tally.durations.withLock { $0.sorted() }
        let worst = durations.last ?? .zero
        let p99 = durations.isEmpty ? .zero : durations[durations.count * 99 / 100]
        let retryAfters = tally.retryAfters.withLock { $0 }
        print("outage: \(counts) over 30 s, p99 \(p99), slowest \(worst), Retry-After values \(retryAfters)")
        #expect((counts[503] ?? 0) > 100, "the token expired and clients were told so: \(counts)")
        #expect(Set(counts.keys).isSubset(of: [200, 503]), "\(counts)")
        // Bounded by token_wait, not by the outage. Alone the slowest answer takes about 10 ms;
        // in the full test command, 150 suites share 2 cores: it took 367 to 837 ms in five runs
        // of one day, and 1,077 ms in another, where the machine, not bearerd, held 4 clients
        // at once. So 99 % of the answers within twice token_wait, and every one within half
        // of auth.request_timeout (10 s), which is what a request waiting for a refresh
        // against the dead server costs.
        #expect(p99 < .milliseconds(1000), "2 × token_wait (500 ms); p99 was \(p99)")
        #expect(worst < .seconds(5), "half of auth.request_timeout; slowest was \(worst)")
        #expect(retryAfters.allSatisfy { Int($0).map { $0 >= 1 && $0 <= 300 } ?? false })
        // Monitoring reads `status`'s exit code: no token to send is not "0, fine".
        let status = try await BearerdProcess.run(["status", "-c", config])
        #expect(status.status == 4, "status exited \(status.status) while requests got 503: \(status.stdout)")
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await upstream.stop()
        try await group.shutdownGracefully()
    }
}

/// What the outage test's clients saw.
private final class Tally: Sendable {
    let durations = Mutex<[Duration]>([])
    let statuses = Mutex<[Int: Int]>([:])
    let retryAfters = Mutex<Set<String>>([])
}
