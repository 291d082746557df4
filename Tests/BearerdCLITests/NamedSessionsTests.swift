import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `sessions:`: one daemon, two APIs, each session on its own listener with its own credential,
/// run as the real binary; the verbs name a session with --session.
@Suite("Named sessions in one daemon", .serialized, .timeLimit(.minutes(2)))
struct NamedSessionsTests {
    @Test func eachListenerSendsItsSessionsTokenAndTheVerbsNameTheirSession() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let oauth = try await FakeOAuthServer.start(group: group)
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let secret = try directory.write("fake-client-secret-31\n", to: "client-secret", mode: 0o600)
        _ = try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"])
        let staticToken = try directory.write("static-token-alpha-7\n", to: "alpha-token", mode: 0o600)
        let (alphaPort, betaPort) = (try FreePort.pick(), try FreePort.pick())
        let gammaToken = try directory.write("static-token-gamma-9\n", to: "gamma-token", mode: 0o600)
        let gammaPort = try FreePort.pick()
        func config(alphaUpstream: Int? = nil, gamma: Bool = false, withBeta: Bool = true) throws -> String {
            let alpha = alphaUpstream.map { upstream in
                """
                  alpha:
                    listen: ["127.0.0.1:\(alphaPort)"]
                    upstream:
                      url: http://127.0.0.1:\(upstream)
                    auth:
                      static_token_file: \(staticToken)
                """
            }
            let third =
                gamma
                ? """
                  gamma:
                    listen: ["127.0.0.1:\(gammaPort)"]
                    upstream:
                      url: http://127.0.0.1:\(first.port)
                    auth:
                      static_token_file: \(gammaToken)
                """ : nil
            let beta = """
                  beta:
                    listen: ["127.0.0.1:\(betaPort)"]
                    upstream:
                      url: http://127.0.0.1:\(second.port)
                    auth:
                      token_url: \(oauth.base)/token
                      client_id: app
                      client_secret_file: \(secret)
                    store:
                      path: beta.store
                      key_file: store.key
                """
            return try directory.write(
                "admin:\n  socket: \(directory.path)/run/admin.sock\nsessions:\n"
                    + [alpha, withBeta ? beta : nil, third].compactMap { $0 }.joined(separator: "\n") + "\n",
                to: "b.yaml"
            )
        }
        let path = try config(alphaUpstream: first.port)
        let bearerd = { (arguments: [String], input: String?) in
            try await BearerdProcess.run(arguments + ["-c", path], input: input)
        }
        var result = try await bearerd(["check-config", "--skip-held"], nil)
        #expect(result.status == 0 && result.stdout.contains("session alpha"), "\(result.stdout)\(result.stderr)")
        let daemon = try BearerdProcess(["serve", "-c", path])
        try await daemon.waitUntilReady()
        func get(_ port: Int) async throws -> (Int, String, String?) {
            try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                let answer = try await client.send(.GET, "/hello")
                let upstream = answer.bodyText
                let seen = (upstream == "first" ? first : second).requests.last?.head.headers["authorization"].first
                return (answer.status, upstream, seen)
            }
        }
        var answer = try await get(alphaPort)
        #expect(answer.0 == 200 && answer.1 == "first" && answer.2 == "Bearer static-token-alpha-7")
        // beta has no login yet: its listener says so, alpha's is not affected.
        answer = try await get(betaPort)
        #expect(answer.0 == 503 && answer.1.contains("`bearerd login --session beta`"), "\(answer.1)")

        // A verb for one session names it; status without one lists them all.
        result = try await bearerd(["token"], nil)
        #expect(result.status != 0 && result.stderr.contains("--session NAME"), "\(result.stderr)")
        result = try await bearerd(["token", "--session", "gamma"], nil)
        #expect(result.status != 0 && result.stderr.contains("alpha, beta"), "\(result.stderr)")
        result = try await bearerd(["status"], nil)
        #expect(result.status == 3, "beta is logged out: \(result.stdout)")
        #expect(result.stdout.contains("session alpha") && result.stdout.contains("session beta"))
        result = try await bearerd(
            ["login", "--session", "beta", "--username", "alice", "--password-stdin"],
            "alice-pass\n"
        )
        #expect(result.status == 0, "\(result.stderr)")
        answer = try await get(betaPort)
        #expect(answer.0 == 200 && answer.1 == "second" && answer.2 == "Bearer fake-access-1")
        result = try await bearerd(["token", "--session", "beta"], nil)
        #expect(result.stdout == "fake-access-1\n")
        result = try await bearerd(["status", "--json"], nil)
        #expect(result.status == 0 && result.stdout.hasPrefix(#"{"sessions":{"alpha":"#), "\(result.stdout)")
        #expect(!result.stdout.contains("fake-access-") && !result.stdout.contains("static-token-alpha"))
        #expect(!daemon.stderr.contains("fake-access-") && !daemon.stderr.contains("static-token-alpha"))

        // What each session did is said of it: access lines, metrics, readiness.
        try await waitUntil {
            daemon.stderr.contains("msg=request") && daemon.stderr.contains("session=beta status=200")
        }
        #expect(daemon.stderr.contains("session=alpha status=200"))
        let socket = TestHTTPClient.Target.unix(path: directory.path + "/run/admin.sock")
        let metrics = try await TestHTTPClient.withConnection(to: socket, group: group) { client in
            try await client.send(.GET, "/metrics").bodyText
        }
        #expect(metrics.contains(#"bearerd_requests_total{class="2xx",session="alpha"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"bearerd_requests_total{class="2xx",session="beta"} 1"#))
        #expect(metrics.contains(#"bearerd_token_valid{session="beta"} 1"#))
        #expect(metrics.contains(#"bearerd_token_refreshes_total{result="ok",session="beta"} 1"#))
        let ready = try await TestHTTPClient.withConnection(to: socket, group: group) { client in
            try await client.send(.GET, "/ready")
        }
        #expect(ready.status == 200)

        // A reload adds a session and changes another's upstream, on a connection kept alive to
        // a third across it: each session keeps its connections, tokens and timers.
        try await TestHTTPClient.withConnection(to: .tcp(port: betaPort), group: group) { client in
            #expect(try await client.send(.GET, "/before").status == 200)
            _ = try config(alphaUpstream: second.port, gamma: true)
            result = try await bearerd(["reload"], nil)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(try await client.send(.GET, "/after").status == 200)
        }
        answer = try await get(gammaPort)
        #expect(answer.0 == 200 && answer.1 == "first" && answer.2 == "Bearer static-token-gamma-9")
        answer = try await get(alphaPort)
        #expect(answer.0 == 200 && answer.1 == "second" && answer.2 == "Bearer static-token-alpha-7")
        answer = try await get(betaPort)
        #expect(answer.0 == 200 && answer.2 == "Bearer fake-access-1")
        #expect(oauth.grants == ["password"], "the reloads kept beta's session")
        result = try await bearerd(["status"], nil)
        #expect(result.stdout.contains("session gamma"))

        // A reload removes a session: its listener closes, its store stays; the others serve on.
        _ = try config(gamma: true)
        result = try await bearerd(["reload"], nil)
        #expect(result.status == 0, "\(result.stderr)")
        await #expect(throws: (any Error).self) { _ = try await get(alphaPort) }
        answer = try await get(betaPort)
        #expect(answer.0 == 200 && answer.2 == "Bearer fake-access-1")
        #expect(FileManager.default.fileExists(atPath: directory.path + "/beta.store"))
        result = try await bearerd(["status"], nil)
        #expect(!result.stdout.contains("session alpha") && result.stdout.contains("session gamma"))
        #expect(oauth.grants == ["password"])

        // A session removed, then added again: its store was let go when it stopped, and its
        // tokens are there when it comes back.
        _ = try config(gamma: true, withBeta: false)
        result = try await bearerd(["reload"], nil)
        #expect(result.status == 0, "\(result.stderr)")
        await #expect(throws: (any Error).self) { _ = try await get(betaPort) }
        _ = try config(gamma: true)
        result = try await bearerd(["reload"], nil)
        #expect(result.status == 0, "\(result.stderr)")
        answer = try await get(betaPort)
        #expect(answer.0 == 200 && answer.2 == "Bearer fake-access-1", "\(answer.1)")
        #expect(oauth.grants == ["password"], "no new login")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait() == 0)
        await oauth.stop()
        try await group.shutdownGracefully()
    }

    /// A reload one session of which cannot apply: the others take the new config, the reload
    /// says which did not; and when no session runs any more, a reload still mends it.
    @Test func aReloadAppliedInPartSaysSoAndAReloadStillMendsADaemonWithoutSessions() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let taken = try await TestUpstream.start(group: group) { _ in .ok("taken") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("static-token-epsilon-5\n", to: "token", mode: 0o600)
        let (onePort, twoPort) = (try FreePort.pick(), try FreePort.pick())
        func session(_ name: String, port: Int, upstream: Int) -> String {
            """
              \(name):
                listen: ["127.0.0.1:\(port)"]
                upstream:
                  url: http://127.0.0.1:\(upstream)
                auth:
                  static_token_file: \(token)
            """
        }
        func write(_ sessions: String...) throws -> String {
            try directory.write(
                "admin:\n  socket: \(directory.path)/run/admin.sock\nsessions:\n" + sessions.joined(separator: "\n")
                    + "\n",
                to: "b.yaml"
            )
        }
        func body(_ port: Int) async -> String? {
            try? await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
                try await $0.send(.GET, "/x").bodyText
            }
        }
        let path = try write(
            session("one", port: onePort, upstream: first.port),
            session("two", port: twoPort, upstream: first.port)
        )
        let daemon = try BearerdProcess(["serve", "-c", path])
        try await daemon.waitUntilReady()

        // two's new listener is taken: one moves to the second upstream, two keeps serving as it was.
        _ = try write(
            session("one", port: onePort, upstream: second.port),
            session("two", port: taken.port, upstream: first.port)
        )
        var result = try await BearerdProcess.run(["reload", "-c", path])
        #expect(result.status == 1 && result.stderr.contains("reloaded in part"), "\(result.stderr)")
        #expect(result.stderr.contains("session two"), "\(result.stderr)")
        #expect(await body(onePort) == "second")
        #expect(await body(twoPort) == "first")

        // Every session replaced by one that cannot start: none runs, and the admin socket still
        // takes the reload that mends it.
        _ = try write(session("three", port: taken.port, upstream: first.port))
        result = try await BearerdProcess.run(["reload", "-c", path])
        #expect(result.status == 1, "\(result.stderr)")
        let free = try FreePort.pick()
        _ = try write(session("three", port: free, upstream: second.port))
        result = try await BearerdProcess.run(["reload", "-c", path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(await body(free) == "second")
        result = try await BearerdProcess.run(["status", "--session", "three", "-c", path])
        #expect(result.status == 0 && result.stdout.contains("static"), "\(result.stdout)\(result.stderr)")
        result = try await BearerdProcess.run(["status", "--session", "one", "-c", path])
        #expect(result.status != 0 && result.stderr.contains("three"), "\(result.stderr)")
        daemon.signal(SIGTERM)
        #expect(try await daemon.wait() == 0)
        await first.stop()
        await second.stop()
        await taken.stop()
    }

    /// A session that cannot start (its port is taken) stops the daemon: the others do not
    /// serve on in a daemon that failed to start.
    @Test func aSessionThatCannotStartStopsTheDaemon() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("static-token-delta-3\n", to: "token", mode: 0o600)
        // A port something else listens on.
        let taken = try await TestUpstream.start(group: MultiThreadedEventLoopGroup.singleton) { _ in .ok() }
        let free = try FreePort.pick()
        let path = try directory.write(
            """
            admin:
              socket: \(directory.path)/run/admin.sock
            sessions:
              one:
                listen: ["127.0.0.1:\(free)"]
                upstream:
                  url: http://127.0.0.1:9
                auth:
                  static_token_file: \(token)
              two:
                listen: ["127.0.0.1:\(taken.port)"]
                upstream:
                  url: http://127.0.0.1:9
                auth:
                  static_token_file: \(token)
            """,
            to: "b.yaml"
        )
        let daemon = try BearerdProcess(["serve", "-c", path])
        let status = try await daemon.wait()
        #expect(status != 0, "\(daemon.stderr)")
        #expect(daemon.stderr.contains("\(taken.port)"), "\(daemon.stderr)")
        await taken.stop()
    }
}
