import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// `auth.verify` against authlib issuing RS256 JWT access tokens with its key at a discovered
/// jwks_uri: verified tokens serve; a token signed by another key under the same kid never
/// reaches the upstream, and the session survives it.
@Suite(
    "Verified access tokens against authlib",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct VerifiedTokensTests {
    @Test func aForgedTokenNeverReachesTheUpstreamAndTheSessionSurvivesIt() async throws {
        let directory = try TemporaryDirectory()
        let idp = try await IdentityProvider.start(ttl: 2, jwt: true)
        try await EnterpriseClientAuthTests.against(idp) { group in
            let bearerd = try await EnterpriseClientAuthTests.serve(
                """
                  client_id: secret-client
                  client_secret_file: \(try directory.write("secret-pass\n", to: "secret"))
                  verify:
                    jwks_uri: discover
                    audience: api://hello
                """,
                idp: idp,
                directory: directory,
                tokenEndpoint: "issuer: \(idp.baseURL)"
            )
            #expect(try await EnterpriseClientAuthTests.login(bearerd).status == 0)
            #expect(try await EnterpriseClientAuthTests.get(bearerd, group: group).status == 200)

            // From now on the token server signs with a key that is not the one it publishes.
            try await Self.forge(true, idp: idp, group: group)
            try await Task.sleep(for: .seconds(3))
            let refused = try await EnterpriseClientAuthTests.get(bearerd, group: group)
            #expect(refused.status == 503, "no verified token: \(refused.status) \(refused.bodyText)")
            #expect(bearerd.process.stderr.contains("failed verification"))
            #expect(!idp.marks.contains("api forged-token -"), "a forged token reached the upstream")

            // Signed right again: the next retry, with the refresh token the forged answer
            // rotated, brings a verified token back without a login.
            try await Self.forge(false, idp: idp, group: group)
            try await waitUntil(.seconds(30), every: .milliseconds(250)) {
                (try? await EnterpriseClientAuthTests.get(bearerd, group: group).status) == 200
            }
            let marks = idp.marks
            #expect(!marks.contains { $0.hasPrefix("refresh_token 4") }, "a spent refresh token was sent: \(marks)")
            #expect(!marks.contains("api forged-token -"))
        }
    }

    static func forge(_ on: Bool, idp: IdentityProvider, group: any EventLoopGroup) async throws {
        let answer = try await TestHTTPClient.withConnection(to: .tcp(port: idp.port), group: group) { client in
            try await client.send(.POST, "/test/forge?on=\(on ? 1 : 0)", headers: ["content-length": "0"])
        }
        try #require(answer.status == 200)
    }
}
