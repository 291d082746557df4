import BearerdConfig
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdCLI

/// What a reload says of each changed key: the fleet's keys are never applied to a running daemon
/// (its pool and its row are made once); those that would move the session elsewhere say so.
@Suite("reload: keys that need a restart")
struct RestartOnlyKeysTests {
    static func configuration(store: String, directory: TemporaryDirectory) throws -> BearerdConfiguration {
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        _ = try directory.write("postgres://u:p@db.example:5432/b\n", to: "pg.url", mode: 0o400)
        _ = try directory.write("postgres://u:p@db2.example:5432/b\n", to: "pg2.url", mode: 0o400)
        let body = """
            upstream:
              url: https://api.example.com/v2
            auth:
              static_token_file: \(try directory.write("t0ken\n", to: "token"))
            store:
              key_file: \(key)
            \(store)
            """
        return try ConfigLoader(environment: [:]).load(yaml: body, source: "test.yaml", baseDirectory: directory.path)
    }

    @Test(arguments: [
        ("  backend: postgres\n  postgres:\n    url_file: pg2.url", ["store.postgres.url_file"], true),
        ("  backend: postgres\n  postgres:\n    url_file: pg.url\n    table: other", ["store.postgres.table"], true),
        (
            "",
            ["store.backend", "store.postgres.url_file"],
            true
        ),
        (
            "  backend: postgres\n  postgres:\n    url_file: pg.url\n    poll_interval: 7s",
            ["store.postgres.poll_interval"], false
        ),
        (
            "  backend: postgres\n  postgres:\n    url_file: pg.url\n    host_name: b", ["store.postgres.host_name"],
            false
        ),
        ("  backend: postgres\n  postgres:\n    url_file: pg.url", [], false),
    ])
    func aChangedFleetKeyIsReported(store: String, changed: [String], movesTheSession: Bool) throws {
        let directory = try TemporaryDirectory()
        let running = try Self.configuration(
            store: "  backend: postgres\n  postgres:\n    url_file: pg.url",
            directory: directory
        )
        let new = try Self.configuration(store: store, directory: directory)
        let found = RestartOnlyKeys.changed(from: running, to: new)
        #expect(found == changed.sorted())
        #expect(found.contains { RestartOnlyKeys.session.contains($0) } == movesTheSession)
    }

    /// `threads`, `metrics.listen` and `shutdown_grace` are made once at start: a reload used to
    /// neither apply a change to them nor say so. It now names them, as taking effect at the
    /// next restart (they do not move the session), and keeps comparing against what runs.
    @Test func whatIsMadeOnceAtStartIsReportedNotIgnored() throws {
        let directory = try TemporaryDirectory()
        let running = try Self.configuration(store: "", directory: directory)
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let new = try ConfigLoader(environment: [:]).load(
            yaml: """
                threads: 3
                shutdown_grace: 5s
                upstream:
                  url: https://api.example.com/v2
                auth:
                  static_token_file: \(directory.path)/token
                store:
                  key_file: \(key)
                metrics:
                  listen: 127.0.0.1:9464
                """,
            source: "test.yaml",
            baseDirectory: directory.path
        )
        let found = RestartOnlyKeys.changed(from: running, to: new)
        #expect(found == ["metrics.listen", "shutdown_grace", "threads"])
        #expect(!found.contains { RestartOnlyKeys.session.contains($0) })
        let after = RestartOnlyKeys.running(new.written, keeping: running.written)
        #expect(RestartOnlyKeys.changed(from: after, to: new.written) == found, "still reported at the next reload")
    }

    /// A reload compares what was written for every key whose descriptor says a reload does not
    /// apply it: a change to any of them, and to nothing else, is named. There is no list of
    /// them to forget a new key in.
    @Test func aChangeToAnyKeyAReloadDoesNotApplyIsNamed() throws {
        let directory = try TemporaryDirectory()
        let running = try Self.configuration(store: "", directory: directory)
        for key in ConfigLoader.knownKeys {
            var new = running
            new.written[key] = (running.written[key] ?? "") + "-changed"
            let expected = ConfigSchema.reload(of: key) == .applies ? [] : [key]
            #expect(RestartOnlyKeys.changed(from: running, to: new) == expected, "\(key)")
        }
        #expect(RestartOnlyKeys.session.contains("store.path") && RestartOnlyKeys.session.contains("auth.token_url"))
    }

    /// What is compared is what the file and the environment say, lists included, before
    /// defaults: a `BEARERD_*` override counts as written.
    @Test func theWrittenValuesComeFromTheFileAndTheEnvironment() throws {
        let directory = try TemporaryDirectory()
        let configuration = try ConfigLoader(environment: ["BEARERD_THREADS": "3", "BEARERD_AUTH_SCOPES": "a,b"]).load(
            yaml: """
                upstream:
                  url: https://api.example.com/v2
                auth:
                  token_url: https://idp.example/token
                  client_id: c
                  scopes: [x]
                """,
            source: "test.yaml",
            baseDirectory: directory.path
        )
        #expect(configuration.written["threads"] == "3")
        #expect(configuration.written["auth.scopes"] == "a\nb")
        #expect(configuration.written["auth.client_id"] == "c")
        #expect(configuration.written["shutdown_grace"] == nil, "a default is not written")
        #expect(configuration.written.keys.count == 5)
    }
}
