import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// An issuer whose every metadata document answers 404 is a config error for every command, as
/// `check-config` says: `login` names what to set and does not say "try again later", and
/// `serve` exits 78 (EX_CONFIG) before it listens.
@Suite("An issuer without metadata", .serialized, .timeLimit(.minutes(2)))
struct IssuerWithoutMetadataTests {
    static func config(_ directory: TemporaryDirectory, issuer: String) throws -> String {
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
              url: http://127.0.0.1:9
            auth:
              issuer: \(issuer)
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

    @Test func loginAndServeCallItAConfigError() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let issuer = try await TestUpstream.start(group: group) { _ in
            .respond(status: .notFound, headers: [], body: "")
        }
        let directory = try TemporaryDirectory()
        let config = try Self.config(directory, issuer: "http://127.0.0.1:\(issuer.port)/realms/x")

        let login = try await BearerdProcess.run(
            ["login", "--username", "alice", "--password-stdin", "-c", config],
            input: "fake-password-77\n"
        )
        #expect(login.status == 1, "\(login.stderr)")
        #expect(login.stderr.contains("every document answered 404"), "\(login.stderr)")
        #expect(login.stderr.contains("set auth.token_url or check auth.issuer"), "\(login.stderr)")
        #expect(!login.stderr.contains("try again later") && !login.stderr.contains("unavailable"), "\(login.stderr)")
        #expect(!login.stderr.contains("fake-password-77") && !login.stderr.contains("fake-client-secret-31"))

        let serve = try BearerdProcess(["serve", "-c", config])
        let status = try await serve.wait(limit: .seconds(15))
        #expect(status == 78, "\(serve.stderr)")
        #expect(serve.stderr.contains("set auth.token_url or check auth.issuer"), "\(serve.stderr)")

        await issuer.stop()
        try await group.shutdownGracefully()
    }
}
