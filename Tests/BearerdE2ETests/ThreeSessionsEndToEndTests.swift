import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// One daemon, three APIs at once, each behind its own listener with its own credential:
/// django-oauth-toolkit with rotating refresh tokens, the tests' identity provider with token
/// exchange (RFC 8693, a platform token from a file), and a static token. Under load on all
/// three, every request carries its own session's token (each API checks it: DOT and the IdP
/// answer only to tokens they issued, and name whom; the static API is checked by the test),
/// each session refreshes on its own, and `status` lists the three.
@Suite(
    "Three sessions, three token servers, one daemon",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct ThreeSessionsEndToEndTests {
    static let clientsPerSession = 8
    static let duration = Duration.seconds(20)

    @Test func threeAPIsUnderLoadEachGetsItsOwnSessionsToken() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let directory = try TemporaryDirectory()
        let dot = try await OAuthServer.start(ttl: 5)
        let platform = try TestKeys.make("ec", named: "platform", in: directory)
        let idp = try await IdentityProvider.start(ttl: 3, platformKeys: platform.publicKey)
        let staticToken = "static-token-for-the-third-api-77"
        let third = try await TestUpstream.start(group: group) { request in
            let sent = request.head.headers["authorization"].first ?? ""
            return sent == "Bearer \(staticToken)"
                ? .ok("static ok") : .respond(status: .unauthorized, headers: [], body: sent)
        }
        do {
            try await self.exercise(
                dot: dot,
                idp: idp,
                platformKey: platform.privateKey,
                third: third,
                staticToken: staticToken,
                directory: directory,
                group: group
            )
        } catch {
            try? await dot.stop()
            try? await idp.stop()
            await third.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await dot.stop()
        try await idp.stop()
        await third.stop()
        try await group.shutdownGracefully()
    }

    func exercise(
        dot: OAuthServer,
        idp: IdentityProvider,
        platformKey: String,
        third: TestUpstream,
        staticToken: String,
        directory: TemporaryDirectory,
        group: any EventLoopGroup
    ) async throws {
        let seed = try await dot.passwordLogin(group: group)
        let keygen = try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"])
        #expect(keygen.status == 0, "\(keygen.stderr)")
        let subject = directory.path + "/subject-token"
        try TokenExchangeEndToEndTests.renew(
            subject,
            with: try IdentityProvider.mintPlatformToken(key: platformKey, subject: "apps:three-sessions")
        )
        let ports = (try FreePort.pick(), try FreePort.pick(), try FreePort.pick())
        let config = try directory.write(
            """
            admin:
              socket: \(directory.path)/admin.sock
            log:
              access: false
            sessions:
              rotating:
                listen: ["127.0.0.1:\(ports.0)"]
                upstream:
                  url: \(dot.baseURL)
                auth:
                  token_url: \(dot.tokenURL)
                  client_id: pw-client
                  client_secret_file: \(try directory.write("pw-secret\n", to: "secret"))
                  refresh_token_file: \(try directory.write(seed + "\n", to: "seed"))
                store:
                  path: \(directory.path)/rotating.store
                  key_file: \(directory.path)/store.key
                proxy:
                  token_wait: 10s
              exchange:
                listen: ["127.0.0.1:\(ports.1)"]
                upstream:
                  url: \(idp.baseURL)
                auth:
                  token_url: \(idp.tokenURL)
                  client_id: exchange-public
                  client_auth: none
                  token_exchange:
                    subject_token_file: \(subject)
                    audience: ["api://hello"]
                proxy:
                  token_wait: 10s
              fixed:
                listen: ["127.0.0.1:\(ports.2)"]
                upstream:
                  url: http://127.0.0.1:\(third.port)
                auth:
                  static_token_file: \(try directory.write(staticToken + "\n", to: "static-token", mode: 0o600))
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "--config", config])
        try await bearerd.waitUntilReady()

        // Each session's clients check what their API answered: whom it saw, or that the token
        // was the session's own.
        let sessions: [(name: String, port: Int, path: String, expected: String)] = [
            ("rotating", ports.0, "/api/hello", #""user": "alice""#),
            ("exchange", ports.1, "/api/hello", #""hello":"apps:three-sessions""#),
            ("fixed", ports.2, "/anything", "static ok"),
        ]
        let tally = Tally()
        let clock = ContinuousClock()
        let deadline = clock.now + Self.duration
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for session in sessions {
                for _ in 0..<Self.clientsPerSession {
                    tasks.addTask {
                        try await TestHTTPClient.withConnection(to: .tcp(port: session.port), group: group) { client in
                            while clock.now < deadline {
                                let answer = try await client.send(.GET, session.path)
                                let body = answer.bodyText.replacingOccurrences(of: " ", with: "")
                                let right =
                                    answer.status == 200
                                    && body.contains(session.expected.replacingOccurrences(of: " ", with: ""))
                                tally.record(session.name, right: right, detail: "\(answer.status) \(answer.bodyText)")
                            }
                        }
                    }
                }
            }
            try await tasks.waitForAll()
        }
        let counts = tally.counts.withLock { $0 }
        Self.log("answers by session (right, wrong): \(counts)")
        for session in sessions {
            let (right, wrong) = counts[session.name] ?? (0, 0)
            #expect(wrong == 0, "\(session.name): \(wrong) wrong answers, first: \(tally.firstWrong(session.name))")
            // Under the parallel suites django-oauth-toolkit answered 551, 136 and 100 times in runs
            // (each of its refreshes holds the session's requests): the bound says each session
            // served, not how fast; what crossed would be a wrong answer.
            #expect(right >= 20, "\(session.name): only \(right) answers")
        }

        // Each session refreshed on its own, at its own token lifetime.
        let metrics = try await TestHTTPClient.withConnection(
            to: .unix(path: directory.path + "/admin.sock"),
            group: group
        ) { try await $0.send(.GET, "/metrics").bodyText }
        func refreshes(_ session: String) -> Int {
            let prefix = #"bearerd_token_refreshes_total{result="ok",session="\#(session)"} "#
            let line = metrics.split(separator: "\n").first { $0.hasPrefix(prefix) }
            return line.flatMap { Int($0.dropFirst(prefix.count)) } ?? 0
        }
        let rotating = refreshes("rotating")
        let exchange = refreshes("exchange")
        Self.log("refreshes: rotating \(rotating) (5 s tokens), exchange \(exchange) (3 s tokens) in \(Self.duration)")
        // At least a few per session (3 and 13 under the parallel suites), and not one per request.
        #expect(rotating >= 2 && rotating <= 12, "rotating: \(rotating) refreshes of 5 s tokens in 20 s")
        #expect(exchange >= 4 && exchange <= 20, "exchange: \(exchange) exchanges of 3 s tokens in 20 s")
        #expect(!bearerd.stderr.contains("rejected"), "a refresh was rejected: reuse revoked the family?")

        let status = try await BearerdProcess.run(["status", "-c", config])
        #expect(status.status == 0, "\(status.stdout)\(status.stderr)")
        for session in sessions {
            #expect(status.stdout.contains("session \(session.name)"), "\(status.stdout)")
        }
        #expect(!status.stdout.contains(staticToken) && !bearerd.stderr.contains(staticToken))
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        #expect(!bearerd.stderr.contains("store is closed"), "a write came after a session's store closed")
    }

    final class Tally: Sendable {
        let counts = Mutex<[String: (right: Int, wrong: Int)]>([:])
        let wrong = Mutex<[String: String]>([:])

        func record(_ session: String, right: Bool, detail: @autoclosure () -> String) {
            self.counts.withLock { counts in
                var entry = counts[session] ?? (0, 0)
                if right { entry.right += 1 } else { entry.wrong += 1 }
                counts[session] = entry
            }
            if !right {
                let text = detail()
                self.wrong.withLock { if $0[session] == nil { $0[session] = text } }
            }
        }

        func firstWrong(_ session: String) -> String { self.wrong.withLock { $0[session] ?? "" } }
    }

    static func log(_ text: String) {
        FileHandle.standardError.write(Data("three sessions: \(text)\n".utf8))
    }
}
