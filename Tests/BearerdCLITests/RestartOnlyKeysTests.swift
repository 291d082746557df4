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
            [
                "store.backend", "store.postgres.ca_file", "store.postgres.connect_timeout", "store.postgres.host_name",
                "store.postgres.lock_timeout", "store.postgres.poll_interval", "store.postgres.sslmode",
                "store.postgres.table", "store.postgres.url_file",
            ],
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
        let merged = ReloadService.merging(new, keepingSessionOf: running)
        #expect(RestartOnlyKeys.changed(from: merged, to: new) == found, "still reported at the next reload")
    }

    /// Every key `ConfigSchema` declares as not applied by a reload is compared by
    /// `RestartOnlyKeys`, so a change of it is named; and nothing else is. A new key declared
    /// `.restart` but forgotten in `RestartOnlyKeys.values` fails here.
    @Test func everyKeyAReloadDoesNotApplyIsCompared() throws {
        let directory = try TemporaryDirectory()
        var compared: Set<String> = []
        for yaml in try ConfigSamples.everySourceAndStore(in: directory) {
            let configuration = try ConfigLoader(environment: [:])
                .load(yaml: yaml, source: "test.yaml", baseDirectory: directory.path)
            compared.formUnion(RestartOnlyKeys.values(configuration).keys)
        }
        let declared = Set(ConfigSchema.keys(reloading: .restart) + ConfigSchema.keys(reloading: .newSession))
        #expect(declared.subtracting(compared).isEmpty, "declared restart-only, never compared")
        #expect(compared.subtracting(declared).isEmpty, "compared, but a reload applies them (or no such key)")
        #expect(RestartOnlyKeys.session.isSubset(of: declared) && RestartOnlyKeys.session.contains("store.path"))
    }
}
