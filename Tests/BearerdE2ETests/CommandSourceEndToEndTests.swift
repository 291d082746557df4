import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// `auth.command` end to end: the real daemon runs a program the test writes, proactively
/// before each token expires, keeps the token through the program's failures, and shows the
/// program and its last run in `status`; the token the program prints never reaches the log.
@Suite(
    "auth.command: a token from a program on the host",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct CommandSourceEndToEndTests {
    /// A helper as users have them: prints a new token that lives 5 s on each run, as JSON;
    /// fails with a message on standard error while `fail` exists.
    static func helper(in directory: TemporaryDirectory) throws -> String {
        try directory.write(
            """
            #!/bin/sh
            dir=\(directory.path)
            if [ -e "$dir/fail" ]; then echo "helper: not logged in; run helper login" >&2; exit 2; fi
            n=$(( $(cat "$dir/runs" 2>/dev/null || echo 0) + 1 ))
            echo "$n" > "$dir/runs"
            printf '{"access_token":"cmd-token-%s","expires_in":5}\\n' "$n"
            """,
            to: "get-token",
            mode: 0o700
        )
    }

    static func runs(_ directory: TemporaryDirectory) -> Int {
        Int(
            (try? String(contentsOfFile: directory.path + "/runs", encoding: .utf8))?.trimmingCharacters(
                in: .whitespacesAndNewlines
            ) ?? ""
        ) ?? 0
    }

    /// `status`'s text with its columns' padding taken out.
    static func status(_ config: String) async throws -> String {
        let text = try await BearerdProcess.run(["status", "-c", config]).stdout
        return text.replacing(/:\s+/, with: ": ")
    }

    @Test func theProgramIsRunBeforeEachExpiryAndItsFailuresKeepTheToken() async throws {
        let directory = try TemporaryDirectory()
        let helper = try Self.helper(in: directory)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await TestUpstream.start(group: group) { request in
            .ok(request.head.headers["authorization"].first ?? "none")
        }
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream.port)
            auth:
              command: [\(helper), "--profile", "ci"]
              command_timeout: 5s
              refresh_margin: 1s
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "--config", config])
        defer { bearerd.signal(SIGTERM) }
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        func get() async throws -> TestHTTPResponse {
            try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
                try await $0.send(.GET, "/x")
            }
        }

        let first = try await get()
        #expect(first.status == 200 && first.bodyText.hasPrefix("Bearer cmd-token-"), "\(first.bodyText)")

        // Proactive: the next token is there before the first expires, without a request waiting.
        var seen: Set<String> = []
        let started = ContinuousClock.now
        while ContinuousClock.now - started < .seconds(9) {
            let response = try await get()
            #expect(response.status == 200, "\(response.bodyText)")
            seen.insert(response.bodyText)
            try await Task.sleep(for: .milliseconds(100))
        }
        // A new token within 9 s of 5 s tokens, every request answered: proactive.
        #expect(seen.count >= 2, "\(seen)")
        // One run per token, a margin before each expiry: not one per request (about 90 here).
        #expect(Self.runs(directory) <= 6, "\(Self.runs(directory)) runs")

        let status = try await Self.status(config)
        #expect(status.contains("client token: command \(helper)"), "\(status)")
        #expect(status.contains("exit 0"), "\(status)")
        #expect(!status.contains("--profile"), "the arguments are the config's: \(status)")

        // The program fails: the current token stays in use while it is valid, `status` says why.
        let before = Self.runs(directory)
        _ = try directory.write("", to: "fail")
        try await waitUntil(.seconds(8), every: .milliseconds(200)) {
            (try? await BearerdProcess.run(["status", "-c", config]))?.stdout.contains("exit 2") == true
        }
        let kept = try await get()
        #expect(kept.status == 200 && kept.bodyText == "Bearer cmd-token-\(before)", "\(kept.bodyText)")
        let failing = try await Self.status(config)
        #expect(failing.contains("command said: helper: not logged in; run helper login"), "\(failing)")

        // Once it expires, callers are told in one sentence; when the program works again,
        // service is back within the engine's retry.
        try await waitUntil(.seconds(8), every: .milliseconds(200)) { (try? await get())?.status == 503 }
        let refused = try await get()
        #expect(refused.bodyText.contains("auth.command"), "\(refused.bodyText)")
        try FileManager.default.removeItem(atPath: directory.path + "/fail")
        try await waitUntil(.seconds(8), every: .milliseconds(200)) { (try? await get())?.status == 200 }

        bearerd.signal(SIGTERM)
        _ = try await bearerd.wait()
        #expect(!bearerd.stderr.contains("cmd-token-"), "a token in the log")
        #expect(bearerd.stderr.contains("helper: not logged in"), "the program's words reach the log")
        await upstream.stop()
        try await group.shutdownGracefully()
    }
}
