import BearerdAuth
import BearerdTestSupport
import BearerdTokens
import Foundation
import Logging
import Synchronization
import Testing

/// A prover that spells out what it was asked to sign: `htm htu nonce`.
final class RecordingProver: DPoPProver {
    func proof(method: String, url: String, accessToken: BearerToken?, nonce: String?) -> String? {
        "\(method) \(url) \(nonce ?? "-")"
    }
}

/// In memory: the key a store or the fleet's row holds.
final class MemoryProofKey: ProofKey {
    let key = Mutex("key-made-here")
    func exported() -> Secret { Secret(self.key.withLock { $0 }) }
    func adopt(_ stored: Secret) -> Bool {
        guard stored.value.hasPrefix("key-") else { return false }
        self.key.withLock { $0 = stored.value }
        return true
    }
}

@Suite("auth.dpop at the token endpoint")
struct DPoPTokenTransportTests {
    static let nonceAsked = FakeTokenEndpoint.json(
        #"{"error":"use_dpop_nonce"}"#,
        status: 400,
        headers: [("DPoP-Nonce", "n1")]
    )

    @Test func aNonceTheServerAsksForIsSentOnceAndThenEveryTime() async throws {
        let server = FakeTokenEndpoint { request, index in
            index == 0 ? Self.nonceAsked : FakeTokenEndpoint.tokens(access: "a\(index)")
        }
        let transport = DPoPTokenTransport(server, prover: RecordingProver())
        let url = "https://idp.example:8443/oauth/token?x=1#f"
        let first = try await transport.send(TokenHTTPRequest(url: url, body: Array("grant_type=x".utf8)))
        #expect(first.status == 200)
        _ = try await transport.send(TokenHTTPRequest(url: url))
        let proofs = server.requests.map { request in request.headers.first { $0.0 == "DPoP" }?.1 }
        #expect(
            proofs == [
                "POST https://idp.example:8443/oauth/token -", "POST https://idp.example:8443/oauth/token n1",
                "POST https://idp.example:8443/oauth/token n1",
            ]
        )
        #expect(server.requests[1].body == Array("grant_type=x".utf8), "the same request, a new proof")
    }

    @Test func askedAgainAfterTheRetryTheAnswerGoesBackAsItIs() async throws {
        let server = FakeTokenEndpoint { _, index in
            FakeTokenEndpoint.json(#"{"error":"use_dpop_nonce"}"#, status: 400, headers: [("DPoP-Nonce", "n\(index)")])
        }
        let transport = DPoPTokenTransport(server, prover: RecordingProver())
        let answer = try await transport.send(TokenHTTPRequest(url: "https://idp/token"))
        #expect(answer.status == 400)
        #expect(server.requests.count == 2, "one retry only")
        let outcome = TokenResponseClassifier.classify(answer, now: Date()) { _ in throw TokenEngineError.body("-") }
        guard case .unavailable = outcome else {
            Issue.record("a nonce asked for twice must not wipe the session: \(outcome)")
            return
        }
    }

    @Test func discoveryGoesWithoutAProof() async throws {
        let server = FakeTokenEndpoint { _, _ in FakeTokenEndpoint.json("{}") }
        let transport = DPoPTokenTransport(server, prover: RecordingProver())
        _ = try await transport.send(
            TokenHTTPRequest(method: "GET", url: "https://idp/.well-known/openid-configuration")
        )
        #expect(server.requests[0].headers.allSatisfy { $0.0 != "DPoP" })
    }

    @Test func aBearerAnswerWhileDPoPIsOnIsAnErrorThatSaysWhatToDo() {
        let bearer = #"{"access_token":"a","token_type":"Bearer","expires_in":60}"#
        let dpop = #"{"access_token":"a","token_type":"DPoP","expires_in":60}"#
        let source = OAuth2Source(settings: .init(endpoint: .tokenURL("https://idp/token"), clientID: "c", dpop: true))
        #expect((#expect(throws: TokenEngineError.self) { try source.parseIssued(Array(bearer.utf8)) })?.code == .body)
        #expect((try? source.parseIssued(Array(dpop.utf8)))?.accessToken.value == "a")
        do {
            _ = try source.parseIssued(Array(bearer.utf8))
        } catch {
            #expect("\(error)".contains("auth.dpop"))
        }
        let plain = OAuth2Source(settings: .init(endpoint: .tokenURL("https://idp/token"), clientID: "c"))
        do {
            _ = try plain.parseIssued(Array(dpop.utf8))
            Issue.record("a DPoP token without auth.dpop must be refused")
        } catch {
            #expect("\(error)".contains("set auth.dpop: true"))
        }
    }

    @Test func theKeyIsKeptInTheStoreWithTheTokensAndTheStoredOneIsTaken() async throws {
        let logger = Logger(label: "test")
        let source = OAuth2Source(settings: .init(endpoint: .tokenURL("https://idp/token"), clientID: "c", dpop: true))
        let server = FakeTokenEndpoint { _, _ in
            FakeTokenEndpoint.json(#"{"access_token":"a","token_type":"DPoP","refresh_token":"r","expires_in":600}"#)
        }
        // A new store: the holder's own key is kept, and written with the first tokens.
        let store = MemoryTokenStore()
        let manager = TokenManager(
            source: source,
            transport: server,
            store: store,
            logger: logger,
            proofKey: MemoryProofKey()
        )
        try await manager.logIn(refreshToken: Secret("r0"))
        #expect(try store.load()?.dpopKey == Secret("key-made-here"))
        // A store with a key: the holder takes it.
        let holder = MemoryProofKey()
        let restored = MemoryTokenStore(
            StoredTokens(user: StoredSession(refreshToken: Secret("r")), dpopKey: Secret("key-stored"))
        )
        _ = TokenManager(source: source, transport: server, store: restored, logger: logger, proofKey: holder)
        #expect(holder.exported() == Secret("key-stored"))
    }
}
