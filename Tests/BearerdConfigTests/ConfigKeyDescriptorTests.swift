import BearerdConfig
import BearerdTestSupport
import Configuration
import Foundation
import Synchronization
import Testing

/// The descriptors are the one place a key is declared: these check that what they declare
/// holds together, so a new key cannot be half-declared.
@Suite struct ConfigKeyDescriptorTests {
    static let keys = ConfigSchema.layout.flatMap(\.keys)

    @Test func noKeyIsDeclaredTwice() {
        #expect(Self.keys.count == Set(Self.keys.map(\.name)).count)
        #expect(Self.keys.count == ConfigSchema.declared.count)
    }

    /// A key's name lies in the section that lays it out, so `auth.json.headers` is printed
    /// under `json:` and read back as what it is.
    @Test func eachKeyLiesInItsSection() {
        func check(_ section: ConfigSection) {
            for item in section.items {
                switch item {
                case .key(let key):
                    let prefix = section.name.isEmpty ? "" : section.name + "."
                    #expect(key.name == prefix + key.leaf, "\(key.name) is laid out in \(section.name)")
                case .section(let subsection):
                    #expect(subsection.name.hasPrefix(section.name), "\(subsection.name) in \(section.name)")
                    check(subsection)
                case .heading, .note:
                    break
                }
            }
        }
        ConfigSchema.layout.forEach(check)
    }

    // Every declared default is a value of its own syntax and inside its range: the builder
    // parses an absent key's default as it parses a written value, and reports a bad one as an
    // issue, so `DeclaredKeysAreReadTests`, which loads configs that read every key, fails.

    /// A key declared secret (`auth.json.headers` may carry an API key) is read with
    /// `isSecret: true`, so swift-configuration redacts it, and an entry it refuses is not
    /// echoed in the error.
    @Test(arguments: ["file", "environment"])
    func aSecretKeysValueIsNeitherReportedNorEchoed(_ from: String) throws {
        let directory = try TemporaryDirectory()
        let read = SecretReads()
        var yaml = """
            upstream:
              url: http://127.0.0.1:1
            auth:
              json:
                refresh_url: http://127.0.0.1:2/refresh

            """
        var environment: [String: String] = [:]
        if from == "file" {
            yaml += "    headers: [\"X-Api-Key sekrit-4711\"]\n"
        } else {
            environment["BEARERD_AUTH_JSON_HEADERS"] = "X-Api-Key sekrit-4711"
        }
        let error = #expect(throws: ConfigError.self) {
            try ConfigLoader(environment: environment, accessReporter: read)
                .load(yaml: yaml, source: "test.yaml", baseDirectory: directory.path)
        }
        #expect(error?.issues.map(\.key).contains { $0.hasPrefix("auth.json.headers") } == true)
        #expect(!"\(String(describing: error))".contains("sekrit"))
        #expect(read.secret.withLock { $0 } == ["auth.json.headers"])
    }

    @Test func choicesAcceptTheirDefault() {
        for key in Self.keys {
            guard case .choice(let words) = key.syntax, let value = key.defaultText else { continue }
            #expect(words.contains(value), "\(key.name) defaults to \(value), not one of \(words)")
        }
    }

    @Test func listsHaveNoScalarDefault() {
        for key in Self.keys where key.kind == .list {
            #expect(key.defaultText == nil, "\(key.name) is a list: its default is defaultList")
        }
        for key in Self.keys where key.kind == .scalar {
            #expect(key.defaultList.isEmpty, "\(key.name) is a scalar: its default is defaultText")
        }
    }
}

/// The keys whose values reached the reader marked secret.
final class SecretReads: AccessReporter, Sendable {
    let secret = Mutex<Set<String>>([])

    func report(_ event: AccessEvent) {
        guard (try? event.result.get())??.isSecret == true else { return }
        let key = event.metadata.key.components.joined(separator: ".")
        self.secret.withLock { _ = $0.insert(key) }
    }
}
