import BearerdConfig
import BearerdTestSupport
import Foundation
import Testing

/// A credential written into the config file is as readable as the file (issue 50): a
/// parameter or header whose name says secret, key, token or password, in a file every user may
/// read, is an error that says how to fix it, and names no value.
@Suite("Config: credentials in a file others may read")
struct ReadableCredentialsTests {
    static let base = "upstream:\n  url: https://api.example.com\n"

    func load(_ body: String, mode: Int) throws -> Result<BearerdConfiguration, ConfigError> {
        let directory = try TemporaryDirectory()
        let path = try directory.write(body, to: "bearerd.yaml", mode: mode)
        do throws(ConfigError) {
            return .success(try ConfigLoader(environment: [:]).load(path: path))
        } catch {
            return .failure(error)
        }
    }

    @Test(
        arguments: [
            (
                "auth:\n  token_url: https://auth.example/t\n  client_id: c\n  extra_params: [\"client_secret=s3cr3t-value-0451\"]\n",
                "auth.extra_params", "client_secret"
            ),
            (
                "auth:\n  static_token_file: TOKEN\nproxy:\n  add_headers: [\"X-Api-Key: sk-live-0123456789\"]\n",
                "proxy.add_headers", "X-Api-Key"
            ),
            (
                "auth:\n  json:\n    refresh_url: https://api.example.com/refresh\n    headers: [\"X-Auth-Token: t0k3n-value-2231\"]\n",
                "auth.json.headers", "X-Auth-Token"
            ),
        ]
    )
    func aCredentialInAFileEveryoneMayReadIsRefused(auth: String, key: String, name: String) throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("static-token", to: "token", mode: 0o600)
        let body = Self.base + auth.replacingOccurrences(of: "TOKEN", with: token)
        guard case .failure(let error) = try self.load(body, mode: 0o644) else {
            Issue.record("a credential in a 0644 config passed")
            return
        }
        #expect(error.issues.map(\.key) == [key])
        let message = error.issues.first?.message ?? ""
        #expect(message.contains(name) && message.contains("mode 0644") && message.contains("chmod 640"), "\(message)")
        for value in ["s3cr3t-value-0451", "sk-live-0123456789", "t0k3n-value-2231"] {
            #expect(!"\(error)".contains(value))
        }
        // The same file readable by bearerd's user and group alone passes.
        guard case .success = try self.load(body, mode: 0o640) else {
            Issue.record("a credential in a 0640 config was refused")
            return
        }
    }

    @Test func aParameterThatIsNoCredentialPassesWhateverTheMode() throws {
        let body =
            Self.base
            + "auth:\n  token_url: https://auth.example/t\n  client_id: c\n  extra_params: [\"audience=https://api.example.com\"]\n"
        guard case .success = try self.load(body, mode: 0o644) else {
            Issue.record("an audience parameter in a 0644 config was refused")
            return
        }
    }
}
