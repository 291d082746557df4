import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// `bearerd login` in a browser, the real binaries: the daemon serves, the CLI is run as a person
/// runs it, and the "browser" it opens (`$BROWSER`) is scripts/peers/browser, which follows the
/// authorization URL, logs in, consents and follows the redirect back to the CLI's listener.
/// Against django-oauth-toolkit (strict: PKCE with S256 required, the redirect URI matched
/// exactly but for a loopback's port, RFC 9207 `iss`) and the tests' authlib server (lenient).
@Suite(
    "Browser login end to end",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(5))
)
struct BrowserLoginEndToEndTests {
    /// A running daemon for one token server, and how to run the CLI against it.
    struct Daemon {
        let directory: TemporaryDirectory
        let config: String
        let process: BearerdProcess
        let port: Int

        static func start(
            issuer: String,
            upstream: String,
            clientID: String,
            secret: String? = nil,
            extra: String = ""
        ) async throws -> Daemon {
            let directory = try TemporaryDirectory()
            let secretLine =
                try secret.map { "  client_secret_file: " + (try directory.write($0 + "\n", to: "secret")) } ?? ""
            let keygen = try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"])
            #expect(keygen.status == 0, "\(keygen.stderr)")
            let config = try directory.write(
                """
                listen: ["127.0.0.1:0"]
                upstream:
                  url: \(upstream)
                auth:
                  issuer: \(issuer)
                  client_id: \(clientID)
                \(secretLine)
                  login_timeout: 10s
                \(extra)
                store:
                  path: \(directory.path)/tokens.store
                  key_file: \(directory.path)/store.key
                admin:
                  socket: \(directory.path)/admin.sock
                log:
                  access: false
                """,
                to: "bearerd.yaml"
            )
            let process = try BearerdProcess(["serve", "--config", config])
            try await process.waitUntilReady()
            return Daemon(directory: directory, config: config, process: process, port: try #require(process.proxyPort))
        }

        /// `bearerd login` with `browser` as `$BROWSER`.
        func login(
            browser: String,
            _ arguments: [String] = []
        ) async throws -> (
            status: Int32, stdout: String, stderr: String
        ) {
            try await BearerdProcess.run(
                ["login", "--config", self.config] + arguments,
                environment: ["BROWSER": browser]
            )
        }

        /// The scripted browser, with `flags`, logging its steps to `log`.
        func browser(_ flags: String = "", log: String) -> String {
            let script = ProjectScript.repository.appendingPathComponent("scripts/peers/browser/browser.py").path
            return "python3 \(script) --log \(self.directory.path)/\(log) \(flags) %s"
        }

        func browserLog(_ name: String) -> String {
            (try? String(contentsOfFile: self.directory.path + "/" + name, encoding: .utf8)) ?? ""
        }

        func status() async throws -> String {
            try await BearerdProcess.run(["status", "--config", self.config]).stdout
        }

        func token() async throws -> String {
            try await BearerdProcess.run(["token", "--config", self.config]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    @Test func aBrowserLoginAtTheStrictServerThenTenSecondTokensUnderLoad() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let daemon = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "code-client",
            extra: "  scopes: [read]"
        )
        try await self.logInAndServe(daemon, issued: "iss")
        daemon.process.signal(SIGTERM)
        _ = try await daemon.process.wait()
        try await server.stop()
    }

    @Test func aBrowserLoginAtTheLenientServerThenTenSecondTokensUnderLoad() async throws {
        let idp = try await IdentityProvider.start(ttl: 10)
        defer { Task { try? await idp.stop() } }
        let daemon = try await Daemon.start(issuer: idp.baseURL, upstream: idp.baseURL, clientID: "browser-client")
        try await self.logInAndServe(daemon, issued: nil)
        #expect(idp.marks.contains { $0.hasPrefix("authorization_code ok") }, "\(idp.marks)")
        daemon.process.signal(SIGTERM)
        _ = try await daemon.process.wait()
        try await idp.stop()
    }

    /// Logs in through the browser, then 4 kept-alive clients for 22 s of 10 s tokens (refreshed
    /// every 5 s or so): every answer 2xx. Paced (20 ms between requests), so as not to starve the
    /// timing tests that run beside it on two cores.
    func logInAndServe(_ daemon: Daemon, issued iss: String?) async throws {
        let login = try await daemon.login(browser: daemon.browser(log: "browser.log"))
        let steps = daemon.browserLog("browser.log")
        #expect(login.status == 0, "\(login.stderr)\n\(steps)")
        #expect(login.stdout.hasPrefix("logged in"), "\(login.stdout)")
        #expect(
            steps.contains("redirect to the loopback listener: code,\(iss.map { $0 + "," } ?? "")state"),
            "\(steps)"
        )
        #expect(steps.contains("Logged in"), "the browser's page: \(steps)")
        // The tokens never pass through the CLI's output, nor the browser's.
        let token = try await daemon.token()
        #expect(token.count > 8)
        #expect(!login.stdout.contains(token) && !login.stderr.contains(token) && !steps.contains(token))

        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let statuses = StatusCounts()
        let port = daemon.port
        let end = ContinuousClock.now + .seconds(22)
        await withTaskGroup(of: Void.self) { clients in
            for _ in 0..<4 {
                clients.addTask {
                    _ = try? await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                        while ContinuousClock.now < end {
                            let response = try await client.send(.GET, "/api/hello")
                            statuses.counts.withLock { $0[response.status, default: 0] += 1 }
                            try await Task.sleep(for: .milliseconds(20))
                        }
                    }
                }
            }
        }
        try await group.shutdownGracefully()
        let counts = statuses.counts.withLock { $0 }
        let served = counts.filter { (200..<300).contains($0.key) }.values.reduce(0, +)
        #expect(served > 100 && counts.keys.allSatisfy { (200..<300).contains($0) }, "\(counts)")
        let status = try await daemon.status()
        #expect(status.contains("session:") && status.contains("user"), "\(status)")
        #expect(try await daemon.token() != token, "22 s of 10 s tokens were refreshed")
    }

    @Test func aWrongStateADenialASecondRedirectAndATimeoutStoreNothingAndSaySo() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let daemon = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "code-client"
        )
        let cases: [(flags: String, message: String, page: String)] = [
            // Refused, and the wait goes on (nobody who can reach the port can end a login):
            // the login then times out.
            ("--state-tamper", "the redirect's state is not this login's", "Login refused"),
            ("--deny", "the login was refused at the server (access_denied); nothing was stored", "Login failed"),
        ]
        for (index, trial) in cases.enumerated() {
            let log = "browser-\(index).log"
            let login = try await daemon.login(browser: daemon.browser(trial.flags, log: log))
            #expect(login.status != 0)
            #expect(login.stderr.contains(trial.message), "\(trial.flags): \(login.stderr)")
            #expect(daemon.browserLog(log).contains(trial.page), "\(trial.flags): \(daemon.browserLog(log))")
            #expect(try await daemon.status().contains("logged out"), "\(trial.flags)")
        }
        // A browser that cannot be started, so never comes back: the URL is printed, and
        // auth.login_timeout (10 s) ends the wait.
        let timedOut = try await daemon.login(browser: "/nonexistent/browser")
        #expect(timedOut.status != 0)
        #expect(timedOut.stderr.contains(server.baseURL + "/o/authorize/?response_type=code"), "\(timedOut.stderr)")
        if !FileManager.default.fileExists(atPath: "/usr/bin/xdg-open") {
            #expect(timedOut.stderr.contains("no browser could be started"), "\(timedOut.stderr)")
        }
        #expect(
            timedOut.stderr.contains("no answer from the browser within 10s (auth.login_timeout)"),
            "\(timedOut.stderr)"
        )
        #expect(try await daemon.status().contains("logged out"))
        #expect(!FileManager.default.fileExists(atPath: daemon.directory.path + "/tokens.store"))

        // A second delivery of the same redirect finds the login over: the listener, while it is
        // still open, says so (409); once the CLI is gone, nothing listens.
        let twice = try await daemon.login(browser: daemon.browser("--twice", log: "twice.log"))
        #expect(twice.status == 0, "\(twice.stderr)")
        // The browser outlives the CLI by a moment.
        var again = ""
        for _ in 0..<700 where !again.contains("again ") {
            try await Task.sleep(for: .milliseconds(50))
            again = daemon.browserLog("twice.log")
        }
        #expect(again.contains("again 409") || again.contains("again refused"), "\(again)")
        daemon.process.signal(SIGTERM)
        _ = try await daemon.process.wait()
        try await server.stop()
    }

    @Test func noBrowserPrintsTheURLAndTakesTheAddressPastedBack() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let daemon = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "code-client"
        )
        let input = Pipe()
        let login = try BearerdProcess(
            ["login", "--no-browser", "--config", daemon.config],
            environment: ["BROWSER": "false"],
            inputPipe: input
        )
        let paste = input.fileHandleForWriting
        var url: Substring?
        for _ in 0..<100 where url == nil {
            try await Task.sleep(for: .milliseconds(100))
            url = login.stderr.split(separator: " ").first { $0.hasPrefix(server.baseURL + "/o/authorize/") }
                .map { $0.split(separator: "\n")[0] }
        }
        let authorization = try #require(url, "\(login.stderr)")
        // A person on another machine: the browser ends on the loopback address, which is copied.
        let browser = ChildProcess()
        browser.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        browser.arguments = [
            "python3", ProjectScript.repository.appendingPathComponent("scripts/peers/browser/browser.py").path,
            "--print-redirect", String(authorization),
        ]
        let output = Pipe()
        browser.standardOutput = output
        try browser.run()
        browser.waitUntilExit()
        let redirect = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(redirect.contains("/callback?"), "\(redirect)")
        paste.write(Data("not the address\n".utf8))
        paste.write(Data(redirect.utf8))
        try paste.close()
        let status = try await login.wait()
        #expect(status == 0, "\(login.stderr)")
        #expect(login.stderr.contains("paste it whole"), "\(login.stderr)")
        #expect(login.stdout.hasPrefix("logged in"), "\(login.stdout)")
        #expect(try await daemon.status().contains("user"))
        daemon.process.signal(SIGTERM)
        _ = try await daemon.process.wait()
        try await server.stop()
    }
}
