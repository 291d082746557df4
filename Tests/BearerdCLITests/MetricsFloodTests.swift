import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A local connect flood on `metrics.listen`: four processes of another user open and drop
/// connections as fast as they can, and ten scrapes made meanwhile all get their answer. The
/// flooder's connections close each other; the scraper's is never the one closed. Needs root, to
/// flood as uid 65534.
@Suite("metrics.listen under a connect flood", .serialized, .enabled(if: getuid() == 0), .timeLimit(.minutes(2)))
struct MetricsFloodTests {
    @Test func everyScrapeGetsThroughAConnectFloodOfAnotherUser() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let directory = try TemporaryDirectory()
        let token = try directory.write("metrics-flood-token\n", to: "token")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/admin.sock
            metrics:
              listen: 127.0.0.1:0
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", config])
        try await waitUntil { bearerd.stderr.contains("msg=\"metrics listening\"") }
        let metricsPort = try #require(bearerd.number(after: "address=127.0.0.1:"))

        // Each flooder keeps up to 8 connections open, opening a new one and dropping its oldest.
        let script = """
            import os, socket, time
            os.setgid(65534); os.setuid(65534)
            end = time.time() + 8
            held = []
            while time.time() < end:
                try:
                    s = socket.socket()
                    s.connect(("127.0.0.1", \(metricsPort)))
                    held.append(s)
                except OSError:
                    pass
                if len(held) > 8:
                    held.pop(0).close()
            """
        let flooders = try (0..<4).map { _ in
            let process = ChildProcess()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", script]
            try process.run()
            return process
        }
        defer { for process in flooders where process.isRunning { process.terminate() } }
        try await Task.sleep(for: .milliseconds(500))

        var answered = 0
        var failures: [String] = []
        for _ in 0..<10 {
            do {
                let scrape = try await TestHTTPClient.withConnection(to: .tcp(port: metricsPort), group: group) {
                    try await $0.send(.GET, "/metrics")
                }
                if scrape.status == 200 && scrape.bodyText.contains("bearerd_") { answered += 1 }
            } catch {
                failures.append("\(error)")
            }
            try await Task.sleep(for: .milliseconds(300))
        }
        #expect(answered == 10, "\(answered) of 10 scrapes answered during the flood: \(failures)")
        #expect(bearerd.stderr.contains("metrics.listen: connection limit reached"), "the flood did reach the limit")
        for process in flooders { process.waitUntilExit() }
    }
}
