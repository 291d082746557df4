import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// A laptop that sleeps for two hours, acted out without a suspend: a debug build's engine
/// takes its wall and boot clocks from `TEST_CLOCK_OFFSET_FILE`, which the test moves forward
/// while the monotonic clock (and the token server's clock) do not.
@Suite(
    "Sleep and wake against authlib",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct WakeEndToEndTests {
    @Test func theFirstRequestAfterATwoHourSleepCarriesAFreshTokenFromOneRefresh() async throws {
        let directory = try TemporaryDirectory()
        let idp = try await IdentityProvider.start(ttl: 3600)
        let offsets = try directory.write("0 0\n", to: "clock-offsets")
        let secret = try directory.write("secret-pass\n", to: "client-secret")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(idp.baseURL)
            auth:
              token_url: \(idp.tokenURL)
              client_id: secret-client
              client_secret_file: \(secret)
            store:
              path: \(directory.path)/tokens.store
              passphrase_file: \(try directory.write("correct horse battery staple\n", to: "passphrase"))
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
        try await EnterpriseClientAuthTests.against(idp) { group in
            let process = try BearerdProcess(
                ["serve", "--config", config],
                environment: ["TEST_CLOCK_OFFSET_FILE": offsets]
            )
            try await process.waitUntilReady()
            let daemon = EnterpriseClientAuthTests.Daemon(
                process: process,
                config: config,
                port: try #require(process.proxyPort)
            )
            let login = try await EnterpriseClientAuthTests.login(daemon)
            #expect(login.status == 0, "\(login.stderr)")
            let before = try await BearerdProcess.run(["token", "-c", config]).stdout
            #expect(try await EnterpriseClientAuthTests.get(daemon, group: group).status == 200)
            #expect(idp.marks == ["password ok client_secret_basic -"], "\(idp.marks)")

            // Two hours pass on the wall and boot clocks; the monotonic clock stands still.
            _ = try directory.write("7200 7200\n", to: "clock-offsets")
            try await Task.sleep(for: .milliseconds(100))
            let first = try await EnterpriseClientAuthTests.get(daemon, group: group)
            #expect(first.status == 200 && first.bodyText.contains("alice"), "\(first.bodyText)")
            #expect(
                idp.marks == ["password ok client_secret_basic -", "refresh_token ok client_secret_basic -"],
                "one refresh, before the first request was sent: \(idp.marks)"
            )
            let after = try await BearerdProcess.run(["token", "-c", config]).stdout
            #expect(!after.isEmpty && after != before, "a fresh token")

            // The wake monitor sees the jump too, and refreshes nothing more.
            try await Task.sleep(for: .seconds(3))
            #expect(try await EnterpriseClientAuthTests.get(daemon, group: group).status == 200)
            #expect(idp.marks.count == 2, "\(idp.marks)")
            let status = try await BearerdProcess.run(["status", "-c", config]).stdout
            #expect(status.contains("state:") && status.contains("ready"), "\(status)")
            #expect(status.contains("session:") && status.contains("user"), "nothing was wiped: \(status)")
            #expect(status.contains("0 in a row"), "\(status)")
            #expect(process.stderr.contains("the machine was suspended"), "\(process.stderr)")
        }
    }

    /// NTP steps this machine's wall clock while the token server's stays put: with 6 s tokens,
    /// requests for 14 s after the step all carry valid tokens (the server marks any expired one
    /// it sees), the proactive refreshes keep their pace, and `status` says the next is seconds
    /// away.
    @Test(arguments: [-3600, -600, 600, 3600])
    func aWallClockStepSendsNoExpiredTokenAndKeepsTheRefreshesOnSchedule(step: Int) async throws {
        let directory = try TemporaryDirectory()
        let idp = try await IdentityProvider.start(ttl: 6)
        let offsets = try directory.write("0 0\n", to: "clock-offsets")
        let config = try Self.config(idp: idp, directory: directory)
        try await EnterpriseClientAuthTests.against(idp) { group in
            let process = try BearerdProcess(
                ["serve", "--config", config],
                environment: ["TEST_CLOCK_OFFSET_FILE": offsets]
            )
            try await process.waitUntilReady()
            let daemon = EnterpriseClientAuthTests.Daemon(
                process: process,
                config: config,
                port: try #require(process.proxyPort)
            )
            let login = try await EnterpriseClientAuthTests.login(daemon)
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try await EnterpriseClientAuthTests.get(daemon, group: group).status == 200)

            _ = try directory.write("\(step) 0\n", to: "clock-offsets")
            let started = ContinuousClock.now
            var statuses: [Int: Int] = [:]
            var sawStep = false
            while ContinuousClock.now - started < .seconds(14) {
                let response = try await EnterpriseClientAuthTests.get(daemon, group: group)
                statuses[response.status, default: 0] += 1
                if !sawStep, process.stderr.contains("the wall clock was stepped") {
                    sawStep = true
                    let status = try await BearerdProcess.run(["status", "-c", config, "--json"]).stdout
                    if let next = try Self.secondsToNextRefresh(status) {
                        #expect(next >= -1 && next <= 6, "the next refresh after a step of \(step) s: \(status)")
                    }
                }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(sawStep, "\(process.stderr)")
            #expect(statuses.keys.sorted() == [200], "\(statuses)")
            let marks = idp.marks
            #expect(!marks.contains { $0.hasPrefix("api expired-token") }, "expired tokens reached the API: \(marks)")
            let refreshes = marks.filter { $0.hasPrefix("refresh_token ok") }.count
            // 6 s tokens are refreshed about 3 s before they expire: four or five in 14 s.
            #expect((3...7).contains(refreshes), "\(refreshes) refreshes in 14 s: \(marks)")
        }
    }

    static func config(
        idp: IdentityProvider,
        directory: TemporaryDirectory,
        tokenURL: String? = nil,
        extra: String = ""
    ) throws -> String {
        let secret = try directory.write("secret-pass\n", to: "client-secret")
        return try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: \(idp.baseURL)
            \(extra)auth:
              token_url: \(tokenURL ?? idp.tokenURL)
              client_id: secret-client
              client_secret_file: \(secret)
            store:
              path: \(directory.path)/tokens.store
              passphrase_file: \(try directory.write("correct horse battery staple\n", to: "passphrase"))
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            """,
            to: "bearerd.yaml"
        )
    }

    /// `next_refresh_at` minus `now` in `bearerd status --json`.
    static func secondsToNextRefresh(_ json: String) throws -> Double? {
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let session = (object["session"] as? [String: Any]) ?? object
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func date(_ key: String) -> Date? {
            guard let text = session[key] as? String ?? object[key] as? String else { return nil }
            return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
        }
        guard let next = date("next_refresh_at") else { return nil }
        let now = try #require(date("now"), "\(json)")
        return next.timeIntervalSince(now)
    }

    /// After a two-hour sleep the token server refuses connections for 5 s (the network is not
    /// back): a request waits as long as `proxy.token_wait` (10 s) allows, through every failed
    /// probe, and is served once the server answers; with `token_wait: 2s` it gets its 503 at
    /// 2 s, with `Retry-After`.
    @Test(arguments: [10, 2])
    func afterAWakeARequestWaitsAsLongAsTokenWaitSays(tokenWait: Int) async throws {
        let directory = try TemporaryDirectory()
        let idp = try await IdentityProvider.start(ttl: 3600)
        let offsets = try directory.write("0 0\n", to: "clock-offsets")
        try await EnterpriseClientAuthTests.against(idp) { group in
            let relay = try await TCPRelay.start(to: idp.port, group: group)
            let config = try Self.config(
                idp: idp,
                directory: directory,
                tokenURL: "http://127.0.0.1:\(relay.port)/oauth/token",
                extra: "proxy:\n  token_wait: \(tokenWait)s\n"
            )
            let process = try BearerdProcess(
                ["serve", "--config", config],
                environment: ["TEST_CLOCK_OFFSET_FILE": offsets]
            )
            try await process.waitUntilReady()
            let daemon = EnterpriseClientAuthTests.Daemon(
                process: process,
                config: config,
                port: try #require(process.proxyPort)
            )
            let login = try await EnterpriseClientAuthTests.login(daemon)
            #expect(login.status == 0, "\(login.stderr)")
            #expect(try await EnterpriseClientAuthTests.get(daemon, group: group).status == 200)

            try await relay.down()
            _ = try directory.write("7200 7200\n", to: "clock-offsets")
            // The daemon reads the file again at most every 50 ms.
            try await Task.sleep(for: .milliseconds(100))
            let back = Task {
                try await Task.sleep(for: .seconds(5))
                try await relay.up()
            }
            let started = ContinuousClock.now
            let response = try await EnterpriseClientAuthTests.get(daemon, group: group)
            let waited = ContinuousClock.now - started
            try await back.value
            if tokenWait > 5 {
                #expect(response.status == 200, "after \(waited): \(response.status) \(response.bodyText)")
                #expect(waited >= .seconds(4.5) && waited < .seconds(tokenWait), "\(waited)")
            } else {
                #expect(response.status == 503, "\(response.bodyText)")
                #expect(response.head.headers["retry-after"].first != nil, "\(response.head.headers)")
                #expect(
                    waited >= .seconds(Double(tokenWait) - 0.2) && waited < .seconds(Double(tokenWait) + 1.5),
                    "\(waited)"
                )
            }
            // Nothing was wiped: the session serves once the server is back.
            try await Task.sleep(for: .seconds(1.5))
            #expect(try await EnterpriseClientAuthTests.get(daemon, group: group).status == 200)
        }
    }
}
