import BearerdAuth
import BearerdConfig
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// `auth.command*` as `check-config` and `serve` read them: the program must be there and
/// executable, where it is found, and what cannot go with it.
@Suite("Config: auth.command")
struct CommandConfigTests {
    let directory: TemporaryDirectory

    init() throws {
        self.directory = try TemporaryDirectory()
    }

    func load(
        _ auth: String,
        environment: [String: String] = ["PATH": "/usr/bin:/bin"]
    ) throws(ConfigError)
        -> BearerdConfiguration
    {
        let body = auth.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
        return try ConfigLoader(environment: environment).load(
            yaml: "upstream:\n  url: https://api.example.com\nauth:\n\(body)\n",
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
    }

    func issues(_ auth: String) -> [String] {
        do {
            _ = try self.load(auth)
            return []
        } catch {
            return error.issues.map { "\($0.key): \($0.message)" }
        }
    }

    @Test func aProgramNextToTheConfigWithItsSettings() throws {
        _ = try self.directory.write("#!/bin/sh\necho t\n", to: "get-token", mode: 0o700)
        let config = try self.load(
            """
            command: ["./get-token", "--profile", "prod"]
            command_env: ["HELPER_HOME=/var/lib/helper"]
            command_directory: .
            command_timeout: 12s
            """
        )
        guard case .command(let command) = config.auth.source else {
            Issue.record("not a command source: \(config.auth.source)")
            return
        }
        #expect(command.argv == [self.directory.path + "/get-token", "--profile", "prod"])
        #expect(command.environment == [NameValue(name: "HELPER_HOME", value: "/var/lib/helper")])
        #expect(command.directory == self.directory.path)
        #expect(command.timeout == .seconds(12))
    }

    @Test func aNameIsFoundInPathAndTheTimeoutDefaultsTo30s() throws {
        let config = try self.load("command: [printf, token]")
        guard case .command(let command) = config.auth.source else {
            Issue.record("not a command source")
            return
        }
        // Resolved now, so that what was checked is what runs.
        #expect(command.argv == ["/usr/bin/printf", "token"] && command.timeout == .seconds(30))
    }

    @Test func whatCannotRunIsAnIssueNamingTheKey() throws {
        _ = try self.directory.write("echo t\n", to: "not-executable", mode: 0o600)
        #expect(
            self.issues("command: [no-such-helper-anywhere]").contains {
                $0.hasPrefix("auth.command: no program no-such-helper-anywhere in PATH")
            }
        )
        #expect(
            self.issues("command: [/nonexistent/helper]").contains {
                $0.hasPrefix("auth.command: /nonexistent/helper does not exist")
            }
        )
        #expect(self.issues("command: [./not-executable]").contains { $0.contains("is not executable") })
        #expect(
            self.issues("command: [printf, x]\ncommand_directory: missing").contains {
                $0.hasPrefix("auth.command_directory:")
            }
        )
        #expect(
            self.issues("command: [printf, x]\ncommand_timeout: 0s").contains { $0.hasPrefix("auth.command_timeout:") }
        )
        #expect(
            self.issues("command: [printf, x]\ncommand_env: [\"NOEQUALS\"]").contains {
                $0.hasPrefix("auth.command_env:")
            }
        )
    }

    @Test func itIsOneSourceAndTakesNoOtherSourcesKeys() {
        #expect(
            self.issues("command: [printf, x]\ntoken_url: https://auth.example/token\nclient_id: c").contains {
                $0.contains("more than one token source")
            }
        )
        #expect(
            self.issues(
                "command: [printf, x]\njson:\n  refresh_url: https://auth.example/r\n  refresh_body: '{{refresh_token}}'"
            )
            .contains { $0.contains("more than one token source") }
        )
        #expect(self.issues("command: [printf, x]\ndpop: true").contains { $0.hasPrefix("auth.dpop:") })
        #expect(
            self.issues("command: [printf, x]\nverify:\n  jwks_uri: https://idp.example/jwks").contains {
                $0.hasPrefix("auth.verify:")
            }
        )
        for key in ["ca_file: /etc/ssl/certs/ca-certificates.crt", "request_timeout: 5s", "connect_timeout: 1s"] {
            let name = String(key.prefix { $0 != ":" })
            #expect(
                self.issues("command: [printf, x]\n\(key)").contains { $0.hasPrefix("auth.\(name): does not apply") }
            )
        }
        #expect(
            self.issues("command_timeout: 5s\nstatic_token_file: /etc/hostname").contains {
                $0.hasPrefix("auth.command_timeout: applies to auth.command only")
            }
        )
        let seed = (try? self.directory.write("r", to: "seed")) ?? ""
        #expect(
            self.issues("command: [printf, x]\nrefresh_token_file: \(seed)").contains {
                $0.hasPrefix("auth.refresh_token_file:")
            }
        )
    }

    @Test func aCredentialInItsEnvironmentInAReadableFileIsRefused() throws {
        let file = try self.directory.write(
            "upstream:\n  url: https://api.example.com\nauth:\n  command: [printf, x]\n  command_env: [\"HELPER_TOKEN=abc\"]\n",
            to: "bearerd.yaml",
            mode: 0o644
        )
        #expect {
            _ = try ConfigLoader(environment: ["PATH": "/usr/bin:/bin"]).load(path: file)
        } throws: { error in
            let text = "\(error)"
            return text.contains("auth.command_env") && text.contains("HELPER_TOKEN") && !text.contains("abc")
        }
    }
}
