import BearerdTestSupport
import Foundation
import Logging
import Testing

@testable import BearerdCLI

/// Why bearerd cannot start names the config key at fault, in its text and as a value.
@Suite("startup errors name their key")
struct CommandErrorTests {
    let directory: TemporaryDirectory

    init() throws {
        self.directory = try TemporaryDirectory()
    }

    func prepare(_ auth: String) throws -> CommandError? {
        let path = try self.directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
            \(auth)
            admin:
              socket: \(self.directory.path)/admin.sock
            """,
            to: "bearerd.yaml"
        )
        guard
            case .failure(let error) = Startup.prepare(
                configPath: path,
                logger: Logger(label: "test"),
                environment: [:]
            )
        else { return nil }
        return error
    }

    @Test func aSecretFileThatIsNotOneLineNamesItsKey() throws {
        let secret = try self.directory.write("first-half-3391\nsecond-half-3391\n", to: "secret")
        let error = try #require(
            try self.prepare(
                "  token_url: http://127.0.0.1:9/token\n  client_id: c\n  client_secret_file: \(secret)"
            )
        )
        #expect(error.keys == ["auth.client_secret_file"])
        #expect(error.code == .config && error.exitCode == 78, "a config fault exits with EX_CONFIG")
        #expect(error.message.contains("auth.client_secret_file: \(secret) must hold the client secret alone"))
        #expect(!error.message.contains("3391"), "never the secret itself")
    }

    @Test func aRefreshTokenFileMissingOrEmptyNamesItsKey() throws {
        let auth = "  token_url: http://127.0.0.1:9/token\n  client_id: c\n  refresh_token_file: "
        let missing = try #require(try self.prepare(auth + "\(self.directory.path)/none"))
        #expect(missing.keys == ["auth.refresh_token_file"])
        #expect(missing.message.contains("auth.refresh_token_file: cannot find \(self.directory.path)/none"))
        let empty = try self.directory.write("\n", to: "refresh")
        let blank = try #require(try self.prepare(auth + empty))
        #expect(blank.keys == ["auth.refresh_token_file"])
        #expect(blank.message.contains("auth.refresh_token_file: \(empty) must hold the refresh token alone"))
    }

    @Test func configProblemsKeepEveryKey() throws {
        let error = try #require(try self.prepare("  token_url: ftp://x\n  client_id: c\n  leeway: forever"))
        #expect(error.keys.contains("auth.token_url") && error.keys.contains("auth.leeway"), "\(error.keys)")
    }
}
