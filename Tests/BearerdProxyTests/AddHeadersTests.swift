import BearerdConfig
import BearerdProxy
import BearerdTestSupport
import Foundation
import NIOHTTP1
import Testing

/// `proxy.add_headers`: static fields sent upstream with every request, which clients cannot
/// change, checked like every other value.
@Suite("proxy.add_headers")
struct AddHeadersTests {
    @Test func theFieldsReachTheUpstreamAndReplaceTheClientsOwn() async throws {
        let yaml = """
            proxy:
              add_headers: ["X-Api-Version: 2024-06-01", "x-tenant:  acme "]
            """
        try await ProxyFixture.with(yaml: yaml) { proxy in
            let response = try await proxy.send(
                .GET,
                "/users",
                headers: HTTPHeaders([("X-Tenant", "evil"), ("x-tenant", "evil-again"), ("x-custom", "kept")])
            )
            #expect(response.status == 200)
            let seen = try #require(proxy.upstream.requests.first)
            #expect(seen.head.headers["x-api-version"] == ["2024-06-01"])
            #expect(seen.head.headers["x-tenant"] == ["acme"])
            #expect(seen.head.headers["x-custom"] == ["kept"])
            #expect(seen.head.headers["authorization"] == ["Bearer \(ProxyFixture.token)"])
        }
    }

    /// With `forwarded_headers` off, the forwarding fields are the operator's to set (a TLS
    /// terminator in front of bearerd).
    @Test func forwardingFieldsMayBeSetWhenBearerdDoesNotSetThem() async throws {
        let yaml = """
            proxy:
              forwarded_headers: false
              add_headers: ["X-Forwarded-Proto: https"]
            """
        try await ProxyFixture.with(yaml: yaml) { proxy in
            _ = try await proxy.send(.GET, "/", headers: ["x-forwarded-proto": "gopher"])
            let seen = try #require(proxy.upstream.requests.first)
            #expect(seen.head.headers["x-forwarded-proto"] == ["https"])
        }
    }

    @Test func withoutTheKeyNothingIsAdded() async throws {
        try await ProxyFixture.with { proxy in
            _ = try await proxy.send(.GET, "/", headers: ["x-tenant": "mine"])
            let seen = try #require(proxy.upstream.requests.first)
            #expect(seen.head.headers["x-tenant"] == ["mine"])
        }
    }

    /// Each refused entry is an issue on the key that says what is wrong, never showing the
    /// value (it may be a credential someone put there anyway).
    @Test(arguments: [
        ("X-Api-Key sekrit-9157", "must look like"),
        ("Bad Name: sekrit-9157", "must look like"),
        (": sekrit-9157", "must look like"),
        ("Host: sekrit-9157", "written by bearerd"),
        ("authorization: Bearer sekrit-9157", "written by bearerd"),
        ("DPoP: sekrit-9157", "written by bearerd"),
        ("Transfer-Encoding: sekrit-9157", "written by bearerd"),
        ("Connection: sekrit-9157", "written by bearerd"),
        ("X-Forwarded-For: sekrit-9157", "proxy.forwarded_headers"),
        ("X-A: sekrit-9157\u{E9}", "printable ASCII"),
        ("X-A: sekrit-9157" + String(repeating: "x", count: 4096), "at most 4KiB"),
    ])
    func aBadEntryIsRefusedWithoutShowingItsValue(_ entry: String, _ says: String) throws {
        let error = try #require(try Self.refusal(of: [entry]))
        #expect(error.issues.map(\.key) == ["proxy.add_headers"])
        #expect(error.description.contains(says), "\(error)")
        #expect(!error.description.contains("sekrit"), "\(error)")
    }

    @Test func aFieldListedTwiceOrTooManyFieldsAreRefused() throws {
        let twice = try #require(try Self.refusal(of: ["X-A: 1", "x-a: 2"]))
        #expect(twice.description.contains("x-a is listed twice"))
        let many = try #require(try Self.refusal(of: (0..<33).map { "X-F\($0): v" }))
        #expect(many.description.contains("at most 32"))
    }

    /// The error `entries` make, or `nil` when they load.
    static func refusal(of entries: [String]) throws -> ConfigError? {
        let directory = try TemporaryDirectory()
        let token = try directory.write("t", to: "token")
        let list = entries.map { "'" + $0.replacingOccurrences(of: "'", with: "''") + "'" }.joined(separator: ", ")
        do {
            _ = try ConfigLoader(environment: [:]).load(
                yaml: """
                    upstream:
                      url: http://127.0.0.1:1
                    auth:
                      static_token_file: \(token)
                    proxy:
                      add_headers: [\(list)]
                    """,
                source: "test.yaml",
                baseDirectory: directory.path
            )
            return nil
        } catch {
            return error
        }
    }
}
