import BearerdAuth
import BearerdFleet
import BearerdJOSE
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

/// `auth.dpop` in a fleet: the tokens are bound to one key, so every host must sign with it. The
/// key travels sealed in the fleet's row with the tokens.
@Suite(
    "A fleet signs DPoP proofs with one key",
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct FleetDPoPTests {
    static let source = OAuth2Source(
        settings: .init(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: Secret("client-secret-value-0042"),
            dpop: true
        )
    )

    /// The public key in a proof's header: the same for two holders of the same private key.
    static func jwk(_ key: DPoPKey) throws -> Substring {
        try #require(key.proof(method: "GET", url: "http://a/", accessToken: nil, nonce: nil)).split(separator: ".")[0]
    }

    @Test func theKeyOfTheHostThatLoggedInIsTheFleetsAndNeverInClearInTheRow() async throws {
        let database = try await PostgresServer.start()
        let directory = try TemporaryDirectory()
        let storeKey = try makeKey(in: directory)
        let endpoint = FakeTokenEndpoint { _, index in
            FakeTokenEndpoint.json(
                #"{"access_token":"access-\#(index)","token_type":"DPoP","refresh_token":"refresh-\#(index)","expires_in":3600}"#
            )
        }
        let keys = [DPoPKey(), DPoPKey()]
        #expect(try Self.jwk(keys[0]) != Self.jwk(keys[1]))
        var hosts: [FleetHost] = []
        do {
            for index in 0..<2 {
                hosts.append(
                    try FleetHost(
                        "host\(index)",
                        database: database,
                        directory: directory,
                        endpoint: endpoint,
                        keyFile: storeKey,
                        source: Self.source,
                        proofKey: keys[index]
                    )
                )
            }
            try await hosts[0].manager.logIn(refreshToken: Secret("refresh-seed"))
            // Host 1 reads the row for its first token and takes the key with the tokens.
            #expect(try await hosts[1].manager.token().value == "access-0")
            #expect(try Self.jwk(keys[1]) == Self.jwk(keys[0]))
            #expect(keys[1].exported() == keys[0].exported())
            #expect(endpoint.requests.count == 1)
            let row = try await database.sql("SELECT encode(sealed, 'escape') FROM bearerd_sessions")
            #expect(!row.contains(keys[0].exported().value), "the key is sealed with the tokens")
        } catch {
            for host in hosts { await host.stop() }
            try? await database.stop()
            throw error
        }
        for host in hosts { await host.stop() }
        try await database.stop()
    }
}
