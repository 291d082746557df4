import BearerdConfig
import BearerdTestSupport
import Foundation
import Testing

@Suite("config/bearerd.example.yaml")
struct ExampleConfigTests {
    static let examplePath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("config/bearerd.example.yaml").path

    @Test func exampleIsValid() throws {
        let directory = try TemporaryDirectory()
        let secret = try directory.write("s", to: "secret")
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let config = try ConfigLoader(
            environment: ["BEARERD_AUTH_CLIENT_SECRET_FILE": secret, "BEARERD_STORE_KEY_FILE": key]
        ).load(path: Self.examplePath)
        #expect(config.store.isEncryptedOnDisk)
        #expect(config.listen.contains(.tcp(host: "127.0.0.1", port: 8080)))
        guard case .oauth2(let oauth2) = config.auth.source else {
            Issue.record("the example does not show the OAuth 2.0 source")
            return
        }
        #expect(oauth2.clientID == "bearerd")
    }

    @Test func exampleDocumentsEveryKey() throws {
        let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        for key in ConfigLoader.knownKeys {
            let leaf = String(key.split(separator: ".").last!)
            #expect(text.contains("\(leaf):"), "the example config does not document \(key)")
        }
    }
}
