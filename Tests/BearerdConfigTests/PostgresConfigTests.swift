import BearerdConfig
import BearerdFleet
import BearerdTestSupport
import Foundation
import Testing

@Suite("store.backend: postgres")
struct PostgresConfigTests {
    let directory: TemporaryDirectory
    let keyFile: String
    let urlFile: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.keyFile = try self.directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        self.urlFile = try self.directory.write("postgres://u:p@db.example:5432/b\n", to: "pg.url", mode: 0o400)
    }

    func issues(_ store: String) -> [ConfigIssue] {
        do {
            _ = try self.load(store)
            return []
        } catch let error as ConfigError {
            return error.issues
        } catch {
            return [ConfigIssue(key: "-", message: "\(error)")]
        }
    }

    func load(_ store: String) throws -> BearerdConfiguration {
        let body = """
            upstream:
              url: https://api.example.com/v2
            auth:
              static_token_file: \(try self.directory.write("t0ken\n", to: "token"))
            store:
            \(store)
            """
        return try ConfigLoader(environment: [:]).load(
            yaml: body,
            source: "test.yaml",
            baseDirectory: self.directory.path
        )
    }

    @Test func theDefaultsAreTheDocumentedOnes() throws {
        let config = try self.load(
            """
              backend: postgres
              key_file: \(self.keyFile)
              postgres:
                url_file: pg.url
            """
        )
        let postgres = try #require(config.store.postgres)
        #expect(postgres.urlFile == self.urlFile)
        #expect(postgres.table == "bearerd_sessions")
        #expect(postgres.tls == nil)
        #expect(postgres.lockTimeout == .seconds(30))
        #expect(postgres.pollInterval == .seconds(30))
        #expect(postgres.connectTimeout == .seconds(5))
        #expect(postgres.hostName == ProcessInfo.processInfo.hostName)
        #expect(try self.load("  key_file: \(self.keyFile)").store.postgres == nil)
    }

    @Test func eachMistakeNamesItsKey() throws {
        let open = try self.directory.write("postgres://u:p@h/b\n", to: "open.url", mode: 0o644)
        let cases: [(String, String)] = [
            ("  backend: postgres\n  postgres:\n    url_file: pg.url", "store.backend"),
            ("  backend: postgres\n  key_file: \(self.keyFile)", "store.postgres.url_file"),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: \(open)",
                "store.postgres.url_file"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: nowhere",
                "store.postgres.url_file"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    sslmode: prefer",
                "store.postgres.sslmode"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    table: \"x; DROP TABLE y\"",
                "store.postgres.table"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    table: Sessions",
                "store.postgres.table"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    lock_timeout: 2h",
                "store.postgres.lock_timeout"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    poll_interval: 0s",
                "store.postgres.poll_interval"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    ca_file: /nowhere.pem",
                "store.postgres.ca_file"
            ),
            (
                "  backend: postgres\n  key_file: \(self.keyFile)\n  postgres:\n    url_file: pg.url\n    host_name: hôte-1",
                "store.postgres.host_name"
            ),
            ("  backend: redis\n  key_file: \(self.keyFile)", "store.backend"),
        ]
        for (store, key) in cases {
            let found = self.issues(store)
            #expect(found.contains { $0.key == key }, "\(store): \(found)")
        }
    }

    @Test func tableNames() {
        for good in ["bearerd_sessions", "_x1", "ops.bearerd_sessions", String(repeating: "a", count: 58), "s.pgx"] {
            #expect(BearerdConfiguration.Store.Postgres.isValidTable(good), "\(good)")
        }
        for bad in [
            "", "1abc", "Sessions", "a.b.c", "a-b", "a b", "\"a\"", String(repeating: "a", count: 59),
            "pg_catalog.bearerd", "pg_sessions", "information_schema.t", "public.pg_authid",
        ] {
            #expect(!BearerdConfiguration.Store.Postgres.isValidTable(bad), "\(bad)")
        }
    }
}
