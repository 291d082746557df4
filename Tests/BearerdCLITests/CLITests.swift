import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@Suite("The bearerd binary", .serialized)
struct CLITests {
    @Test func versionPrintsTheVersion() async throws {
        let result = try await BearerdProcess.run(["version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("bearerd "))
    }

    /// A build from a git checkout names its commit, not only the package's build.
    @Test func versionNamesTheCommitOfACheckout() async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().path
        let git = ChildProcess()
        git.executableURL = URL(fileURLWithPath: "/usr/bin/git")
        git.arguments = ["-C", root, "rev-parse", "--short=12", "HEAD"]
        let output = Pipe()
        git.standardOutput = output
        git.standardError = FileHandle.nullDevice
        guard (try? git.run()) != nil else { return }
        git.waitUntilExit()
        let head = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard git.terminationStatus == 0, head.count == 12 else { return }
        let result = try await BearerdProcess.run(["version"])
        #expect(result.stdout.hasSuffix("(commit \(head))\n"), "\(result.stdout) at \(head)")
    }

    @Test(arguments: [
        ["--help"], ["serve", "--help"], ["check-config", "--help"], ["version", "--help"], ["login", "--help"],
        ["logout", "--help"], ["status", "--help"], ["token", "--help"],
    ])
    func everyCommandHasHelp(arguments: [String]) async throws {
        let result = try await BearerdProcess.run(arguments)
        #expect(result.status == 0)
        #expect(result.stdout.contains("USAGE: bearerd"))
    }

    @Test func checkConfigPrintsOK() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("abc", to: "token")
        let config = try directory.write(
            "upstream:\n  url: http://127.0.0.1:9\nauth:\n  static_token_file: \(token)\n",
            to: "b.yaml"
        )
        let result = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(result.status == 0)
        #expect(result.stdout == "OK\n")
    }

    /// `check-config` checks what `serve` checks before it binds: a key of the wrong length, or
    /// one that does not open the existing store, used to pass it while `serve` exited 78.
    @Test func checkConfigChecksTheStoreKeyAgainstTheStore() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let oauth = try await FakeOAuthServer.start(group: group)
        let directory = try TemporaryDirectory()
        let config = try SessionVerbTests.config(directory, oauth: oauth, upstream: 9)
        let login = try await BearerdProcess.run(
            ["login", "-c", config, "--username", "alice", "--password-stdin"],
            input: "alice-pass\n"
        )
        try #require(login.status == 0, "\(login.stderr)")
        let ok = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(ok.status == 0 && ok.stdout.hasSuffix("OK\n"), "\(ok.stdout) \(ok.stderr)")

        let key = directory.path + "/store.key"
        try FileManager.default.removeItem(atPath: key)
        _ = try await BearerdProcess.run(["keygen", "--out", key])
        let otherKey = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(otherKey.status == 1)
        #expect(
            otherKey.stderr.contains("store.key_file: the key does not match the token store"),
            "\(otherKey.stderr)"
        )
        let serve = try await BearerdProcess.run(["serve", "-c", config])
        #expect(serve.status == 78, "serve agrees: \(serve.stderr)")

        try FileManager.default.removeItem(atPath: key)
        _ = try directory.write(String(repeating: "k", count: 16), to: "store.key", mode: 0o400)
        let short = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(short.status == 1 && short.stderr.contains("store.key_file:") && short.stderr.contains("32 bytes"))

        chmod(key, 0o644)
        let open = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(open.status == 1 && open.stderr.contains("other users may read it"), "\(open.stderr)")
        await oauth.stop()
        try await group.shutdownGracefully()
    }

    /// Which endpoint discovery found in which document (django-oauth-toolkit lists its
    /// revocation endpoint only in RFC 8414's), a 404 issuer as a config error naming what to
    /// set, and an unreachable one as a note.
    @Test func checkConfigSaysWhereDiscoveryFoundEachEndpoint() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let issuer = try await TestUpstream.start(group: group) { request in
            let base = "http://" + (request.head.headers["host"].first ?? "") + "/o"
            switch request.head.uri {
            case "/o/.well-known/oauth-authorization-server":
                return .respond(
                    status: .ok,
                    headers: [("content-type", "application/json")],
                    body:
                        #"{"issuer":"\#(base)","token_endpoint":"\#(base)/token/","revocation_endpoint":"\#(base)/revoke_token/"}"#
                )
            case "/o/.well-known/openid-configuration":
                return .respond(
                    status: .ok,
                    headers: [("content-type", "application/json")],
                    body:
                        #"{"issuer":"\#(base)","token_endpoint":"\#(base)/token/","userinfo_endpoint":"\#(base)/userinfo/"}"#
                )
            default:
                return .respond(status: .notFound, headers: [], body: "")
            }
        }
        let directory = try TemporaryDirectory()
        let secret = try directory.write("s\n", to: "secret")
        func config(_ issuerURL: String) throws -> String {
            try directory.write(
                "upstream:\n  url: http://127.0.0.1:9\nauth:\n  issuer: \(issuerURL)\n  client_id: app\n  client_secret_file: \(secret)\nadmin:\n  socket: \(directory.path)/run/admin.sock\n",
                to: "b.yaml"
            )
        }
        let base = "http://127.0.0.1:\(issuer.port)/o"
        let found = try await BearerdProcess.run(["check-config", "-c", try config(base)])
        #expect(found.status == 0, "\(found.stderr)")
        #expect(
            found.stdout.contains(
                "auth.issuer: revocation_endpoint \(base)/revoke_token/ (from \(base)/.well-known/oauth-authorization-server)"
            ),
            "\(found.stdout)"
        )
        #expect(found.stdout.contains("auth.issuer: token_endpoint \(base)/token/"))
        let missing = try await BearerdProcess.run([
            "check-config", "-c", try config("http://127.0.0.1:\(issuer.port)/nothing"),
        ])
        #expect(missing.status == 1)
        #expect(
            missing.stderr.contains("every document answered 404")
                && missing.stderr.contains("set auth.token_url or check auth.issuer"),
            "\(missing.stderr)"
        )
        await issuer.stop()
        let gone = try await BearerdProcess.run(["check-config", "-c", try config(base)])
        #expect(
            gone.status == 0 && gone.stdout.contains("note: cannot reach auth.issuer"),
            "\(gone.stdout) \(gone.stderr)"
        )
        try await group.shutdownGracefully()
    }

    @Test func checkConfigListsEveryProblemAndFails() async throws {
        let directory = try TemporaryDirectory()
        let config = try directory.write("upstream:\n  url: ftp://x\nlisten: [\"0.0.0.0:1\"]\ntypo: 1\n", to: "b.yaml")
        let result = try await BearerdProcess.run(["check-config", "-c", config])
        #expect(result.status == 1)
        #expect(result.stderr.contains("has 4 problems"))
        #expect(result.stderr.contains("upstream.url: must be an http or https URL (got \"ftp://x\")"))
        #expect(result.stderr.contains("listen: 0.0.0.0:1 is not a loopback address"))
        #expect(result.stderr.contains("typo: unknown key"))
        #expect(result.stderr.contains("auth: required: a token source"))
    }

    @Test func checkConfigReadsTheConfigPathFromTheEnvironment() async throws {
        let result = try await BearerdProcess.run(
            ["check-config"],
            environment: ["BEARERD_CONFIG": "/nonexistent/b.yaml"]
        )
        #expect(result.status == 1)
        #expect(result.stderr.contains("/nonexistent/b.yaml: the config file does not exist"))
    }

    @Test func serveWithABadConfigExitsWithEXCONFIG() async throws {
        let directory = try TemporaryDirectory()
        let config = try directory.write("upstream:\n  url: nope\n", to: "b.yaml")
        let result = try await BearerdProcess.run(["serve", "--config", config])
        #expect(result.status == 78)
        #expect(result.stderr.contains("upstream.url"))
    }

    /// The session verbs used to print `bearerd: bearerd: …` for a broken config: the message
    /// and the verb each added the program's name.
    @Test(
        "every verb names the program once before a config's problems",
        arguments: [["serve"], ["check-config"], ["status"], ["token"], ["login"], ["logout"]]
    )
    func aBrokenConfigIsReportedOnceByEveryVerb(verb: [String]) async throws {
        let directory = try TemporaryDirectory()
        let config = try directory.write("upstream:\n  url: nope\n", to: "b.yaml")
        let result = try await BearerdProcess.run(verb + ["--config", config])
        #expect(result.status != 0)
        #expect(result.stderr.hasPrefix("bearerd: \(config) has "), "\(result.stderr)")
        #expect(!result.stderr.contains("bearerd: bearerd:"), "\(result.stderr)")
    }

    /// A full run of the real binary: requests of every kind, an in-flight request at SIGTERM
    /// that still completes, exit 0, and no token anywhere in what it logged at trace level.
    @Test func serveDrainsOnSIGTERMAndNeverLogsTheToken() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await TestUpstream.start(group: group) { request in
            switch request.head.uri {
            case "/api/slow": .delayed(.milliseconds(400), .ok("slow done"))
            case "/api/401": .respond(status: .unauthorized, headers: [], body: "")
            default: .ok()
            }
        }
        let secret = "cli-secret-token-5b1e0c77d3"
        let directory = try TemporaryDirectory()
        let token = try directory.write(secret + "\n", to: "token")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream.port)/api
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/admin.sock
            log:
              level: trace
              access_query: true
            """,
            to: "b.yaml"
        )
        // The daemon inherits a core limit it must lower itself (as root, raise it to make sure).
        var unlimited = rlimit(rlim_cur: rlim_t.max, rlim_max: rlim_t.max)
        if getuid() == 0 { _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &unlimited) }
        let bearerd = try BearerdProcess(["serve", "--config", config])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        // Debug and trace lines stay short: service-lifecycle used to log each service as a
        // reflection of the whole configuration, on one line.
        #expect(!bearerd.stderr.contains("BearerdConfiguration("))
        #expect(bearerd.stderr.split(separator: "\n").allSatisfy { $0.utf8.count < 1000 })
        // A crash writes no core file with the tokens in it.
        let limits = try String(contentsOfFile: "/proc/\(bearerd.pid)/limits", encoding: .utf8)
        let core = limits.split(separator: "\n").first { $0.hasPrefix("Max core file size") }
        #expect(core.map { Array($0.split(separator: " ").dropFirst(4).prefix(2)) } == ["0", "0"], "\(core ?? "")")

        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let ok = try await client.send(.GET, "/ok?q=1")
            #expect(ok.status == 200)
            let rejected = try await client.send(
                .GET,
                "/401",
                headers: ["authorization": "Bearer \(secret)"]
            )
            #expect(rejected.status == 401)
        }
        _ = try await RawClient.exchange(
            port: port,
            "GET http://x/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            group: group
        )
        let slow = Task {
            try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                try await client.send(.GET, "/slow")
            }
        }
        try await waitUntil { upstream.requests.contains { $0.head.uri == "/api/slow" } }
        bearerd.signal(SIGTERM)
        let response = try await slow.value
        #expect(response.status == 200)
        #expect(response.bodyText == "slow done")
        let status = try await bearerd.wait()
        #expect(status == 0)
        let logs = bearerd.stderr
        #expect(logs.contains("msg=\"shutting down"))
        #expect(logs.contains("msg=stopped drained=true"))
        #expect(logs.contains("path=/slow"))
        #expect(!logs.contains(secret), "the token leaked into the logs")
        await upstream.stop()
        try await group.shutdownGracefully()
    }

}
