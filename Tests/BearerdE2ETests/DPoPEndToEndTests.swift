import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// bearerd with `auth.dpop: true` against authlib's server with RFC 9449 DPoP
/// (`scripts/idp-server --dpop`): token requests carry proofs and the server's nonce, tokens and
/// refresh tokens are bound to bearerd's key, and a protected resource wants a fresh proof of
/// that key per request, with nonces of its own that change every 2 s, and refuses a replay.
@Suite(
    "DPoP against authlib",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct DPoPEndToEndTests {
    struct Counts: Decodable {
        var token_nonce_asked: Int
        var api_nonce_asked: Int
        var api_ok: Int
        var api_refused: Int
        var replays_refused: Int
        var api_nonces: Int
        var last: [String: String]
    }

    static func counts(_ idp: IdentityProvider, group: any EventLoopGroup) async throws -> Counts {
        let answer = try await TestHTTPClient.withConnection(to: .tcp(port: idp.port), group: group) { client in
            try await client.send(.GET, "/test/dpop")
        }
        return try JSONDecoder().decode(Counts.self, from: Data(answer.bodyText.utf8))
    }

    @Test func boundTokensServeAcrossExpiriesNoncesAndARestartAndAReplayIsRefused() async throws {
        let directory = try TemporaryDirectory()
        #expect(try await BearerdProcess.run(["keygen", "--out", directory.path + "/store.key"]).status == 0)
        let idp = try await IdentityProvider.start(ttl: 3, dpopNonceSeconds: 2)
        try await EnterpriseClientAuthTests.against(idp) { group in
            let auth = """
                  client_id: secret-client
                  client_secret_file: \(try directory.write("secret-pass\n", to: "secret"))
                  dpop: true
                store:
                  path: \(directory.path)/tokens.store
                  key_file: \(directory.path)/store.key
                proxy:
                  token_wait: 10s
                """
            var bearerd = try await EnterpriseClientAuthTests.serve(auth, idp: idp, directory: directory)
            let login = try await EnterpriseClientAuthTests.login(bearerd)
            try #require(login.status == 0, "\(login.stderr)")
            // The first token request had no nonce: the server asked for one, bearerd sent it.
            #expect(idp.marks.prefix(2) == ["password 400-use_dpop_nonce - -", "password ok client_secret_basic -"])

            // 8 s of requests on one kept-alive connection: past two expiries and four nonces.
            var answered = 0
            var statuses: [Int: Int] = [:]
            try await TestHTTPClient.withConnection(to: .tcp(port: bearerd.port), group: group) { client in
                let end = ContinuousClock.now + .seconds(8)
                while ContinuousClock.now < end {
                    let answer = try await client.send(.GET, "/api/dpop")
                    statuses[answer.status, default: 0] += 1
                    answered += 1
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            #expect(statuses == [200: answered], "\(statuses)")
            var counts = try await Self.counts(idp, group: group)
            #expect(counts.api_ok == answered, "each answer came from a request the resource accepted")
            // Asked once; after that each answer's DPoP-Nonce kept bearerd's proofs current.
            #expect(counts.api_nonce_asked >= 1)
            #expect(counts.api_nonces >= 3, "the resource's nonce changed every 2 s and bearerd followed it")
            #expect(counts.api_refused == 0)
            let refreshes = idp.marks.filter { $0 == "refresh_token ok client_secret_basic -" }.count
            #expect(refreshes >= 2, "\(idp.marks)")

            // The resource refuses a proof it has seen, as it came from bearerd.
            let last = counts.last
            let replay = try await TestHTTPClient.withConnection(to: .tcp(port: idp.port), group: group) { client in
                try await client.send(
                    .GET,
                    "/api/dpop",
                    headers: ["authorization": last["authorization"] ?? "", "dpop": last["dpop"] ?? ""]
                )
            }
            #expect(replay.status == 401)
            #expect(replay.head.headers["www-authenticate"].first?.contains("invalid_dpop_proof") == true)
            counts = try await Self.counts(idp, group: group)
            #expect(counts.replays_refused == 1)

            // A restart signs with the key the store kept: the refresh token, bound to it, works.
            bearerd.process.signal(SIGTERM)
            _ = try await bearerd.process.wait()
            try await Task.sleep(for: .seconds(4))
            bearerd = try await EnterpriseClientAuthTests.serve(auth, idp: idp, directory: directory)
            let afterRestart = try await EnterpriseClientAuthTests.get(bearerd, "/api/dpop", group: group)
            #expect(afterRestart.status == 200, "\(afterRestart.bodyText) \(bearerd.process.stderr)")
            let refreshesAfter = idp.marks.filter { $0 == "refresh_token ok client_secret_basic -" }.count
            #expect(refreshesAfter > refreshes, "the restarted daemon refreshed with its stored key: \(idp.marks)")
            #expect(!idp.marks.contains { $0.hasPrefix("refresh_token 400 ") }, "\(idp.marks)")
            for process in [bearerd.process] {
                #expect(!process.stderr.contains(last["dpop"] ?? "-"), "no proof in the log")
            }
        }
    }
}
