import BearerdConfig
import BearerdTestSupport
import Foundation
import Testing

/// `per_caller: true` goes only with what keeps each user's tokens their own: a source each user
/// logs in to, a file store under the daemon's key, callers the kernel names.
@Suite("per_caller: a token set per local user, and what it cannot go with")
struct PerCallerConfigTests {
    let directory: TemporaryDirectory
    let key: String
    let secret: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.key = try self.directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        self.secret = try self.directory.write("s3cret\n", to: "secret")
    }

    func issues(_ session: String) -> [ConfigIssue] {
        let body = """
            sessions:
              api:
                per_caller: true
                listen: ["127.0.0.1:8081"]
                upstream:
                  url: https://api.example.com
            \(session.split(separator: "\n", omittingEmptySubsequences: false).map { "    " + $0 }.joined(separator: "\n"))
            """
        do {
            _ = try ConfigLoader(environment: [:]).loadSessions(
                yaml: body,
                source: "test.yaml",
                baseDirectory: self.directory.path
            )
            return []
        } catch {
            return error.issues
        }
    }

    var loginSource: String {
        """
        auth:
          token_url: https://auth.example.com/token
          client_id: app
          client_secret_file: \(self.secret)
        """
    }

    var store: String {
        """
        store:
          key_file: \(self.key)
        """
    }

    @Test func aLoginSourceWithAKeyedFileStoreIsAccepted() throws {
        #expect(self.issues(self.loginSource + "\n" + self.store).isEmpty)
        let sessions = try ConfigLoader(environment: [:]).loadSessions(
            yaml: """
                per_caller: true
                listen: ["127.0.0.1:8081"]
                upstream:
                  url: https://api.example.com
                \(self.loginSource)
                \(self.store)
                callers:
                  max_loaded: 50
                  idle_unload: 5m
                  max_refreshes_per_minute: 40
                """,
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
        let callers = try #require(sessions.entries.first).configuration.callers
        #expect(callers == .init(enabled: true, maxLoaded: 50, idleUnload: .seconds(300), maxRefreshesPerMinute: 40))
    }

    @Test(arguments: [
        ("auth:\n  static_token_file: TOKEN", "auth.static_token_file"),
        ("auth:\n  command: [/bin/true]", "auth.command"),
    ])
    func aSourceNobodyLogsInToIsRefused(auth: String, key: String) throws {
        let token = try self.directory.write("t0ken\n", to: "token")
        let found = self.issues(auth.replacingOccurrences(of: "TOKEN", with: token) + "\n" + self.store)
        #expect(found.contains { $0.key == "sessions.api.\(key)" }, "\(found)")
    }

    @Test func aUsersStoreCanBeNoOtherSessionsStore() throws {
        let body = """
            sessions:
              api:
                per_caller: true
                listen: ["127.0.0.1:8081"]
                upstream: {url: "https://api.example.com"}
                auth: {token_url: "https://auth.example.com/token", client_id: app, client_auth: none}
                store: {path: \(self.directory.path)/api.store, key_file: \(self.key)}
              other:
                per_caller: true
                listen: ["127.0.0.1:8082"]
                upstream: {url: "https://api.example.com"}
                auth: {token_url: "https://auth.example.com/token", client_id: app, client_auth: none}
                store: {path: \(self.directory.path)/api, key_file: \(self.key)}
              plain:
                listen: ["127.0.0.1:8083"]
                upstream: {url: "https://api.example.com"}
                auth: {token_url: "https://auth.example.com/token", client_id: app, client_auth: none}
                store: {path: \(self.directory.path)/api.uid-1000.store, key_file: \(self.key)}
            """
        var found: [ConfigIssue] = []
        do {
            _ = try ConfigLoader(environment: [:]).loadSessions(
                yaml: body,
                source: "t.yaml",
                baseDirectory: self.directory.path
            )
        } catch {
            found = error.issues
        }
        #expect(
            found.contains { $0.key == "sessions.other.store.path" && $0.message.contains("session api") },
            "\(found)"
        )
        #expect(
            found.contains { $0.key == "sessions.plain.store.path" && $0.message.contains("users' stores") },
            "\(found)"
        )
    }

    @Test func whatWouldShareATokenOrLoseTheCallerIsRefusedByItsKey() throws {
        let seed = try self.directory.write("rt\n", to: "seed")
        let cases: [(String, String)] = [
            (self.loginSource + "\n  client_credentials: true\n" + self.store, "sessions.api.auth.client_credentials"),
            (
                self.loginSource + "\n  refresh_token_file: \(seed)\n" + self.store,
                "sessions.api.auth.refresh_token_file"
            ),
            (self.loginSource, "sessions.api.per_caller"),
            (self.loginSource + "\n" + self.store + "\nsocket_allow_any_user: true", "sessions.api.per_caller"),
        ]
        for (body, key) in cases {
            let found = self.issues(body)
            #expect(found.contains { $0.key == key }, "\(key): \(found)")
        }
    }
}
