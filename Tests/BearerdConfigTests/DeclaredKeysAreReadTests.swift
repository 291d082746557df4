import BearerdConfig
import BearerdTestSupport
import Configuration
import Foundation
import Synchronization
import Testing

/// Every key ``ConfigLoader`` read, from swift-configuration's access reporting.
final class ReadKeys: AccessReporter, Sendable {
    private let keys = Mutex<Set<String>>([])

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        self.keys.withLock { _ = $0.insert(key) }
    }

    var all: Set<String> { self.keys.withLock { $0 } }
}

@Suite("every declared key is read")
struct DeclaredKeysAreReadTests {
    /// Over the three token sources and the two stores, the builder reads every key the schema
    /// declares: a key declared (so accepted in a file) but never read would be silently ignored.
    @Test func everyDeclaredKeyIsRead() throws {
        let directory = try TemporaryDirectory()
        let secret = try directory.write("s", to: "secret")
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        _ = try directory.write("postgres://u:p@db.example:5432/b\n", to: "pg.url", mode: 0o400)
        let sources = [
            "auth:\n  token_url: https://idp.example/token\n  client_id: c\n  client_secret_file: \(secret)",
            "auth:\n  json:\n    refresh_url: https://app.example/refresh",
            "auth:\n  static_token_file: \(try directory.write("t0ken\n", to: "token"))",
        ]
        let stores = [
            "store:\n  key_file: \(key)",
            "store:\n  key_file: \(key)\n  backend: postgres\n  postgres:\n    url_file: pg.url",
        ]
        let read = ReadKeys()
        for auth in sources {
            for store in stores {
                let yaml = "upstream:\n  url: https://api.example.com/v2\n\(auth)\n\(store)"
                _ = try ConfigLoader(environment: [:], accessReporter: read)
                    .load(yaml: yaml, source: "test.yaml", baseDirectory: directory.path)
            }
        }
        let declared = Set(ConfigLoader.knownKeys)
        #expect(declared.subtracting(read.all).sorted() == [], "declared, never read")
        #expect(read.all.subtracting(declared).sorted() == [], "read, never declared (a typo in the builder)")
    }
}
