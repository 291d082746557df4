import BearerdAuth
import BearerdConfig
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// The token engine owns its settings types and their defaults for code (tests, the fuzz
/// targets); the config declares the defaults a user reads. These hold the two together (the
/// OAuth 2.0 client's: `ExampleConfigTests.aClientBuiltInCodeHasTheDeclaredDefaults`).
@Suite("Config: the sections' defaults in code are the declared ones")
struct SectionDefaultsTests {
    static func load(auth: String) throws -> BearerdConfiguration {
        try ConfigLoader(environment: [:]).load(
            yaml: "upstream:\n  url: https://api.example.com\nauth:\n" + auth,
            source: "test.yaml",
            baseDirectory: "/"
        )
    }

    @Test func aJSONSourceBuiltInCodeIsOneConfiguredWithTheSameKeys() throws {
        let config = try Self.load(auth: "  json:\n    refresh_url: https://api.example.com/refresh\n")
        guard case .json(let configured) = config.auth.source else {
            Issue.record("not json: \(config.auth.source)")
            return
        }
        #expect(configured == JSONSourceSettings(refreshURL: "https://api.example.com/refresh"))
    }
}
