import BearerdTokens
import Testing

@testable import BearerdFleet

@Suite("store.postgres.url_file's URL")
struct PostgresURLTests {
    @Test func theFormsLibpqUsers() throws {
        let tcp = try PostgresURL.parse("postgres://bearerd:s3cret%2Fx@db.internal:6432/sessions", file: "f")
        #expect(tcp.address == .tcp(host: "db.internal", port: 6432))
        #expect(tcp.user == "bearerd")
        #expect(tcp.password?.value == "s3cret/x")
        #expect(tcp.database == "sessions")
        #expect(!tcp.address.isLocal)
        let defaults = try PostgresURL.parse("postgresql://bearerd@127.0.0.1", file: "f")
        #expect(defaults.address == .tcp(host: "127.0.0.1", port: 5432))
        #expect(defaults.password == nil && defaults.database == nil && defaults.address.isLocal)
        let v6 = try PostgresURL.parse("postgres://u@[::1]:5433/d", file: "f")
        #expect(v6.address == .tcp(host: "::1", port: 5433))
        let socket = try PostgresURL.parse("postgres://u@%2Frun%2Fpostgresql/d", file: "f")
        #expect(socket.address == .socket("/run/postgresql/.s.PGSQL.5432"))
    }

    /// Local means an address of this machine, parsed (issue 35): `127.db.corp` is a name that
    /// resolves anywhere, and a local database gets `sslmode: disable` by default.
    @Test(arguments: [
        ("localhost", true), ("127.0.0.1", true), ("127.1.2.3", true), ("::1", true), ("::ffff:127.0.0.1", true),
        ("127.db.corp", false), ("127.0.0.1.nip.io", false), ("128.0.0.1", false), ("::2", false),
        ("localhost.corp", false), ("db.internal", false),
    ])
    func onlyAnAddressOfThisMachineIsLocal(host: String, local: Bool) {
        #expect(PostgresURL.Address.tcp(host: host, port: 5432).isLocal == local, "\(host)")
    }

    @Test func aWrongURLIsRefusedWithoutEchoingIt() {
        for text in [
            "mysql://u:hunter2pass@h/d", "postgres://:hunter2pass@h/d", "postgres://u:hunter2pass@/d",
            "postgres://u:hunter2pass@h/d?sslmode=disable", "postgres://u:hunter2pass@h:99999/d",
            "postgres://u:hunter2pass@h/d\npostgres://x@y/z", "not a url hunter2pass",
        ] {
            do {
                _ = try PostgresURL.parse(text, file: "/etc/bearerd/pg.url")
                Issue.record("accepted \(text)")
            } catch {
                #expect(error.description.hasPrefix("store.postgres.url_file: /etc/bearerd/pg.url"))
                #expect(!error.description.contains("hunter2pass"))
            }
        }
    }
}
