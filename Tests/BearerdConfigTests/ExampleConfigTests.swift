import BearerdConfig
import BearerdProxy
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@Suite("config/bearerd.example.yaml")
struct ExampleConfigTests {
    /// The least a config can say: the upstream, the token URL and the client id.
    static let minimalYAML = """
        upstream:
          url: "https://api.example.com/v2"
        auth:
          token_url: https://auth.example.com/oauth/token
          client_id: bearerd
        """
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

    /// The example, the fuzz seed and the fuzz dictionary are generated from the key
    /// descriptors (`scripts/config-reference`): a committed copy that drifts from the code fails
    /// here. (The seed had lost upstream.client_cert_file and proxy.allow_upgrades when it was a
    /// copy kept by hand.)
    @Test func theCommittedFilesAreTheGeneratedOnes() throws {
        let root = URL(fileURLWithPath: Self.examplePath).deletingLastPathComponent().deletingLastPathComponent()
        let generated = [
            "config/bearerd.example.yaml": ConfigReference.exampleConfig(),
            "fuzz/corpus/config/example": ConfigReference.exampleConfig(),
            "fuzz/config.dict": ConfigReference.fuzzDictionary(),
        ]
        for (path, text) in generated.sorted(by: { $0.key < $1.key }) {
            let committed = try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
            #expect(committed == text, "\(path) is not what the descriptors generate: run scripts/config-reference")
        }
        let dictionary = ConfigReference.fuzzDictionary()
        for key in ConfigLoader.knownKeys {
            for part in key.split(separator: ".") {
                #expect(dictionary.contains("\"\(part):\""), "the fuzz dictionary lacks \"\(part):\" (\(key))")
            }
        }
    }

    @Test func exampleDocumentsEveryKey() throws {
        let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
        for key in ConfigLoader.knownKeys {
            let leaf = String(key.split(separator: ".").last!)
            #expect(text.contains("\(leaf):"), "the example config does not document \(key)")
        }
    }

    /// "Every key below shows its default": the example and a config holding only what the
    /// example sets that has no default (the upstream, the token server, the client, the store
    /// key) load to the same values, so a default changed in the code and not in the example (or
    /// the other way round) fails here.
    @Test func theDocumentedDefaultsAreTheRealOnes() throws {
        let directory = try TemporaryDirectory()
        let secret = try directory.write("s", to: "secret")
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let environment = ["BEARERD_AUTH_CLIENT_SECRET_FILE": secret, "BEARERD_STORE_KEY_FILE": key]
        let example = try ConfigLoader(environment: environment).load(path: Self.examplePath)
        let minimal = try ConfigLoader(environment: environment).load(
            yaml: Self.minimalYAML,
            source: "minimal.yaml",
            baseDirectory: URL(fileURLWithPath: Self.examplePath).deletingLastPathComponent().path
        )
        // What was written differs, by design; what it loads to must not.
        let documented = Self.fields(example).filter { $0.key != "written" }
        let real = Self.fields(minimal).filter { $0.key != "written" }
        for (field, value) in documented where real[field] != value {
            Issue.record("\(field): the example shows \(value), the default is \(real[field] ?? "nothing")")
        }
        #expect(documented.count == real.count && documented.count > 50)
    }

    /// The config scripts/install and the package put in /etc/bearerd is the example with the
    /// keys an installation sets, and nothing else changed.
    @Test func theInstalledConfigIsTheExampleWithTheKeysAnInstallationSets() {
        let example = ConfigReference.exampleConfig().split(separator: "\n", omittingEmptySubsequences: false)
        let installed = ConfigReference.exampleConfig(setting: [
            "store.key_file": "store.key", "socket_allow_gids": "[bearerd]",
        ]).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(example.count == installed.count)
        let changed = zip(example, installed).filter { $0 != $1 }.map { String($0.1) }
        #expect(changed == ["socket_allow_gids: [bearerd]", "  key_file: store.key"])
    }

    /// A client built in code (tests, the fuzz target) is the one a config writing only its
    /// token URL and client id gives: its other fields come from the same descriptors.
    @Test func aClientBuiltInCodeHasTheDeclaredDefaults() throws {
        let loaded = try ConfigLoader(environment: [:]).load(
            yaml: Self.minimalYAML,
            source: "minimal.yaml",
            baseDirectory: "/"
        )
        guard case .oauth2(let configured) = loaded.auth.source else {
            Issue.record("not an OAuth 2.0 client: \(loaded.auth.source)")
            return
        }
        let built = OAuth2Client(clientID: "bearerd", tokenURL: "https://auth.example.com/oauth/token")
        #expect(Self.fields(built) == Self.fields(configured))
        #expect(Self.fields(built).count > 10)
    }

    /// Every leaf of the configuration's value, by its path (`proxy.maxHeaderCount: 100`).
    static func fields(_ value: Any, path: String = "") -> [String: String] {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .set {
            return [path: mirror.children.map { "\($0.value)" }.sorted().joined(separator: ",")]
        }
        guard !mirror.children.isEmpty else { return [path: "\(value)"] }
        var fields: [String: String] = [:]
        for (index, child) in mirror.children.enumerated() {
            let name = path.isEmpty ? (child.label ?? "\(index)") : "\(path).\(child.label ?? "\(index)")"
            fields.merge(Self.fields(child.value, path: name)) { first, _ in first }
        }
        return fields
    }
}
