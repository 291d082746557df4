import BearerdConfig
import BearerdProxy
import BearerdTestSupport
import BearerdWire
import Foundation
import Logging
import Testing

@Suite("sessions: several APIs in one config, each problem named by its key")
struct ConfiguredSessionsTests {
    let directory: TemporaryDirectory
    let tokenFile: String
    let key: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.tokenFile = try self.directory.write("t0ken\n", to: "token")
        self.key = try self.directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
    }

    func load(_ body: String, environment: [String: String] = [:]) throws(ConfigError) -> ConfiguredSessions {
        try ConfigLoader(environment: environment).loadSessions(
            yaml: body,
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
    }

    func issues(_ body: String, environment: [String: String] = [:]) -> [ConfigIssue] {
        do {
            _ = try self.load(body, environment: environment)
            return []
        } catch {
            return error.issues
        }
    }

    /// Two sessions, each on its own port, with what the daemon shares at the top.
    var twoAPIs: String {
        """
        log:
          level: debug
        sessions:
          github:
            listen: ["127.0.0.1:8081"]
            upstream:
              url: https://api.github.com
            auth:
              static_token_file: \(self.tokenFile)
          billing:
            listen: ["127.0.0.1:8082"]
            upstream:
              url: https://billing.example.com/v1
            auth:
              static_token_file: \(self.tokenFile)
            store:
              key_file: \(self.key)
        """
    }

    @Test func aConfigWithoutSessionsIsOneSessionNamedDefaultReadAsBefore() throws {
        let sessions = try self.load(
            "upstream:\n  url: https://api.example.com\nauth:\n  static_token_file: \(self.tokenFile)\n"
        )
        #expect(!sessions.isNamed)
        #expect(sessions.names == ["default"])
        let before = try ConfigLoader(environment: [:]).load(
            yaml: "upstream:\n  url: https://api.example.com\nauth:\n  static_token_file: \(self.tokenFile)\n",
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
        #expect(sessions.daemon.store.path == before.store.path)
        #expect(sessions.daemon.listen == before.listen)
        #expect(sessions.daemon.written == before.written)
    }

    @Test func eachSessionHasItsOwnKeysAndTheDaemonsKeysAreShared() throws {
        let sessions = try self.load(self.twoAPIs)
        #expect(sessions.isNamed)
        #expect(sessions.names == ["billing", "github"])
        let github = try #require(sessions["github"])
        let billing = try #require(sessions["billing"])
        #expect(github.listen == [.tcp(host: "127.0.0.1", port: 8081)])
        #expect(billing.listen == [.tcp(host: "127.0.0.1", port: 8082)])
        #expect("\(github.upstream.target)".contains("api.github.com"))
        #expect("\(billing.upstream.target)".contains("billing.example.com"))
        #expect(github.log.level == .debug && billing.log.level == .debug)
        // Each its own store file and profile, unless it names them: where tokens.store would be,
        // the same file whether $STATE_DIRECTORY is set (the daemon) or not (a verb run by hand).
        #expect(billing.store.path == "/var/lib/bearerd/billing.store")
        #expect(billing.store.profile == "billing")
        #expect(github.store.path == "/var/lib/bearerd/github.store")
        let underSystemd = try self.load(self.twoAPIs, environment: ["STATE_DIRECTORY": "/var/lib/bearerd"])
        #expect(underSystemd["billing"]?.store.path == billing.store.path)
        let elsewhere = try self.load(self.twoAPIs, environment: ["STATE_DIRECTORY": "/srv/state"])
        #expect(elsewhere["github"]?.store.path == "/srv/state/github.store")
    }

    @Test func aSessionsKeyAtTheTopAndADaemonKeyInASessionAreNamed() {
        let issues = self.issues(
            """
            upstream:
              url: https://api.example.com
            sessions:
              one:
                threads: 2
                upstream:
                  url: https://api.example.com
                auth:
                  static_token_file: \(self.tokenFile)
            """
        )
        #expect(issues.map(\.key).sorted() == ["sessions.one.threads", "upstream"], "\(issues)")
        #expect(issues.first { $0.key == "upstream" }?.message.contains("sessions.NAME.upstream") == true)
    }

    @Test func aSessionsProblemIsNamedUnderItsSession() {
        let issues = self.issues(self.twoAPIs.replacingOccurrences(of: "https://api.github.com", with: "ftp://x"))
        #expect(issues.map(\.key) == ["sessions.github.upstream.url"], "\(issues)")
    }

    /// Two ways of writing one address are one listener; port 0 is a new port each time.
    @Test func oneAddressWrittenTwoWaysIsOneListener() {
        func listening(_ first: String, _ second: String) -> [ConfigIssue] {
            self.issues(
                """
                sessions:
                  one:
                    listen: ["\(first)"]
                    upstream:
                      url: https://api.example.com
                    auth:
                      static_token_file: \(self.tokenFile)
                  two:
                    listen: ["\(second)"]
                    upstream:
                      url: https://api.example.com
                    auth:
                      static_token_file: \(self.tokenFile)
                """
            )
        }
        #expect(listening("[::1]:8081", "[0:0:0:0:0:0:0:1]:8081").map(\.key) == ["sessions.two.listen"])
        #expect(listening("localhost:8081", "127.0.0.1:8081").map(\.key) == ["sessions.two.listen"])
        #expect(listening("unix:/run/b/x.sock", "unix:/run//b/./x.sock").map(\.key) == ["sessions.two.listen"])
        #expect(listening("[::ffff:127.0.0.1]:8081", "127.0.0.1:8081").map(\.key) == ["sessions.two.listen"])
        #expect(listening("127.0.0.1:0", "127.0.0.1:0").isEmpty)
        #expect(listening("127.0.0.1:8081", "127.0.0.2:8081").isEmpty)
    }

    /// A wildcard takes every address of its family on its port (`::` takes IPv4 too).
    @Test func aWildcardCollidesWithEveryAddressOnItsPort() throws {
        func address(_ text: String) throws -> ListenAddress {
            try #require(ListenAddress.parse(text).value, "\(text)")
        }
        #expect(try address("0.0.0.0:8081").collides(with: try address("127.0.0.1:8081")))
        #expect(try address("[::1]:8081").collides(with: try address("[::]:8081")))
        #expect(try address("[::]:8081").collides(with: try address("127.0.0.2:8081")))
        #expect(try !address("0.0.0.0:8081").collides(with: try address("[::1]:8081")))
        #expect(try !address("0.0.0.0:8081").collides(with: try address("0.0.0.0:8082")))
        #expect(try !address("unix:/run/a.sock").collides(with: try address("127.0.0.1:8081")))
    }

    @Test func twoSessionsCannotShareAListenerOrAStore() {
        var shared = self.twoAPIs.replacingOccurrences(of: "127.0.0.1:8082", with: "127.0.0.1:8081")
        shared = shared.replacingOccurrences(
            of: "      key_file: \(self.key)",
            with: "      key_file: \(self.key)\n      path: github.store"
        )
        shared = shared.replacingOccurrences(
            of: "    auth:\n      static_token_file: \(self.tokenFile)\n  billing:",
            with:
                "    auth:\n      static_token_file: \(self.tokenFile)\n    store:\n      key_file: \(self.key)\n      path: ./x/../github.store\n  billing:"
        )
        let keys = self.issues(shared).map(\.key).sorted()
        #expect(keys == ["sessions.billing.listen", "sessions.billing.store.path"], "\(keys)")
    }

    @Test(arguments: ["Upper", "1st", "a.b", String(repeating: "x", count: 33), "with space"])
    func aSessionNameOtherThanPlainIsRefused(_ name: String) {
        let issues = self.issues(self.twoAPIs.replacingOccurrences(of: "  github:", with: "  \"\(name)\":"))
        #expect(issues.map(\.key) == ["sessions.\(name)"], "\(issues)")
    }

    @Test func anEnvironmentOverrideOfASessionsKeyIsAmbiguous() {
        let issues = self.issues(self.twoAPIs, environment: ["BEARERD_UPSTREAM_URL": "https://other.example.com"])
        #expect(issues.map(\.key) == ["BEARERD_UPSTREAM_URL"], "\(issues)")
        // The daemon's own keys may still be set so.
        #expect(self.issues(self.twoAPIs, environment: ["BEARERD_LOG_LEVEL": "info"]).isEmpty)
    }

    @Test func sessionsThatIsNotAMapIsNamed() {
        #expect(self.issues("sessions: [a, b]\n").map(\.key) == ["sessions"])
        #expect(self.issues("sessions: {}\n").map(\.key) == ["sessions"])
    }
}
