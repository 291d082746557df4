import BearerdTestSupport
import Foundation
import NIOCore
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
}
