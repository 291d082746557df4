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
        let token = try directory.write("t", to: "token")
        let config = try ConfigLoader(environment: ["BEARERD_AUTH_STATIC_TOKEN_FILE": token]).load(
            path: Self.examplePath
        )
        #expect(config.listen.contains(.tcp(host: "127.0.0.1", port: 8080)))
    }

    @Test func exampleDocumentsEveryKey() throws {
        let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        for key in ConfigLoader.knownKeys {
            let leaf = String(key.split(separator: ".").last!)
            #expect(text.contains("\(leaf):"), "the example config does not document \(key)")
        }
    }
}
