import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import CoreFoundation
import Glibc
#endif

/// `login`, `logout`, `status` and `token`, run as the real binary against an in-process OAuth
/// server: once on the store directly (no daemon), once through a running daemon.
@Suite("Session verbs", .serialized, .timeLimit(.minutes(2)))
struct SessionVerbTests {
    /// A config with an encrypted store, an admin socket and an upstream, all in `directory`.
    static func config(_ directory: TemporaryDirectory, oauth: FakeOAuthServer, upstream: Int) throws -> String {
        let secret = try directory.write("fake-client-secret-31\n", to: "client-secret")
        chmod(secret, 0o600)
        let keygen = ChildProcess()
        keygen.executableURL = URL(fileURLWithPath: BearerdProcess.executable)
        keygen.arguments = ["keygen", "--out", directory.path + "/store.key"]
        keygen.standardOutput = FileHandle.nullDevice
        try keygen.run()
        keygen.waitUntilExit()
        return try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream)
            auth:
              token_url: \(oauth.base)/token
              revocation_url: \(oauth.base)/revoke
              device_authorization_url: \(oauth.base)/device
              client_id: app
              client_secret_file: client-secret
            store:
              path: tokens.store
              key_file: store.key
            admin:
              socket: \(directory.path)/run/admin.sock
            """,
            to: "b.yaml"
        )
    }

    static let secrets = ["alice-pass", "fake-refresh-", "fake-client-secret-31", "fake-device-code"]

    static func expectNoSecret(_ text: String, allowAccess: Bool = false, _ comment: Comment? = nil) {
        for secret in Self.secrets { #expect(!text.contains(secret), comment) }
        if !allowAccess { #expect(!text.contains("fake-access-"), comment) }
    }

    @Test func everyVerbWorksOnTheStoreWhenNoDaemonRuns() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let oauth = try await FakeOAuthServer.start(group: group)
        let directory = try TemporaryDirectory()
        let config = try Self.config(directory, oauth: oauth, upstream: 9)
        let bearerd = { (arguments: [String], input: String?) in
            try await BearerdProcess.run(arguments + ["-c", config], input: input)
        }

        var result = try await bearerd(["status"], nil)
        #expect(result.status == 3 && result.stdout.contains("state:    logged out"))
        #expect(result.stdout.contains("daemon:   not running"))

        result = try await bearerd(["login", "--username", "alice", "--password-stdin"], "wrong-pass\n")
        #expect(result.status == 1 && result.stderr.contains("check the user name and password"))
        result = try await bearerd(["login", "--username", "alice", "--password-stdin"], "alice-pass\n")
        #expect(result.status == 0 && result.stdout.hasPrefix("logged in"), "\(result.stderr)")
        Self.expectNoSecret(result.stdout + result.stderr)

        result = try await bearerd(["status", "--json"], nil)
        #expect(result.status == 0)
        #expect(result.stdout.contains(#""state":"ready""#) && result.stdout.contains(#""session":"user""#))
        Self.expectNoSecret(result.stdout + result.stderr)

        result = try await bearerd(["token"], nil)
        #expect(result.status == 0 && result.stdout == "fake-access-1\n", "a valid stored token, no refresh")
        #expect(oauth.grants == ["password", "password"])

        result = try await bearerd(["logout"], nil)
        #expect(result.status == 0 && result.stdout.contains("the token server revoked the session"))
        #expect(oauth.revoked == ["fake-refresh-1"])
        result = try await bearerd(["token"], nil)
        #expect(result.status == 1 && result.stderr.contains("bearerd login"))

        result = try await bearerd(["login", "--refresh-token-stdin"], "fake-refresh-1\n")
        #expect(result.status == 1 && result.stderr.contains("refused this refresh token"), "a revoked token")

        result = try await bearerd(["login", "--device"], nil)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("open http://127.0.0.1/device in a browser and enter the code FAKE-CODE"))
        #expect(result.stdout.hasPrefix("logged in"))
        Self.expectNoSecret(result.stdout + result.stderr)
        #expect(try await bearerd(["token"], nil).stdout == "fake-access-2\n")

        await oauth.stop()
        try await group.shutdownGracefully()
    }

    @Test func everyVerbGoesThroughTheRunningDaemon() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let oauth = try await FakeOAuthServer.start(group: group)
        let upstream = try await TestUpstream.start(group: group)
        let directory = try TemporaryDirectory()
        let config = try Self.config(directory, oauth: oauth, upstream: upstream.port)
        let daemon = try BearerdProcess(["serve", "-c", config])
        // The admin socket is its own service: it may come up after the proxy says it listens.
        try await daemon.waitUntilReady()
        let port = try #require(daemon.proxyPort)
        let bearerd = { (arguments: [String], input: String?) in
            try await BearerdProcess.run(arguments + ["-c", config], input: input)
        }

        // Only the daemon's user may use the admin socket: mode 0600 from the start.
        var info = stat()
        #expect(stat(directory.path + "/run/admin.sock", &info) == 0 && info.st_mode & 0o777 == 0o600)

        if getuid() == 0 {
            // SO_PEERCRED: even with the socket opened to everyone by mistake, another user's
            // connection is closed unanswered.
            let socket = directory.path + "/run/admin.sock"
            chmod(directory.path + "/run", 0o755)
            chmod(socket, 0o666)
            let stranger = try PeerProbe.answerBytes(to: socket, asUID: 65534)
            #expect(stranger == "0", "uid 65534 got \(stranger)")
            let owner = try PeerProbe.answerBytes(to: socket, asUID: 0)
            #expect(Int(owner).map { $0 > 0 } == true, "root got \(owner)")
            chmod(socket, 0o600)
            chmod(directory.path + "/run", 0o700)
        }

        var result = try await bearerd(["status"], nil)
        #expect(result.status == 3 && result.stdout.contains("daemon:   running (admin socket"))
        // The store is the daemon's: a second daemon is refused, naming it.
        result = try await BearerdProcess.run(["serve", "-c", config])
        #expect(result.status == 78 && result.stderr.contains("pid \(daemon.pid)"))

        result = try await bearerd(["login", "--username", "alice", "--password-stdin"], "alice-pass\n")
        #expect(result.status == 0, "\(result.stderr)")
        try await waitUntil { daemon.stderr.contains(#"msg="logged in""#) }
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let answer = try await client.send(.GET, "/hello")
            #expect(answer.status == 200)
        }
        #expect(upstream.requests.last?.head.headers["authorization"] == ["Bearer fake-access-1"])

        result = try await bearerd(["status", "--json"], nil)
        #expect(
            result.stdout.contains(#""state":"ready""#) && result.stdout.contains(#""last_refresh_grant":"password""#)
        )
        Self.expectNoSecret(result.stdout + result.stderr)
        result = try await bearerd(["token"], nil)
        #expect(result.stdout == "fake-access-1\n")

        result = try await bearerd(["logout"], nil)
        #expect(result.status == 0 && oauth.revoked == ["fake-refresh-1"])
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let refused = try await client.send(.GET, "/hello")
            #expect(refused.status == 503 && refused.bodyText.contains("not_logged_in"))
        }

        result = try await bearerd(["login", "--device"], nil)
        #expect(result.status == 0 && result.stderr.contains("FAKE-CODE"), "\(result.stderr)")
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let answer = try await client.send(.GET, "/hello")
            #expect(answer.status == 200)
        }
        #expect(upstream.requests.last?.head.headers["authorization"] == ["Bearer fake-access-2"])
        #expect(oauth.grants.filter { $0 == "password" }.count == 1, "the CLI never talked to the token server")

        daemon.signal(SIGTERM)
        #expect(try await daemon.wait() == 0)
        Self.expectNoSecret(daemon.stderr)
        #expect(!FileManager.default.fileExists(atPath: directory.path + "/run/admin.sock"))
        await upstream.stop()
        await oauth.stop()
        try await group.shutdownGracefully()
    }
}
