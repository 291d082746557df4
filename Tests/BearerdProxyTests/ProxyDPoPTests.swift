import BearerdAuth
import BearerdProxy
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Synchronization
import Testing

/// Signs nothing: each "proof" spells out what it was asked for, so the upstream can check it.
final class SpellingProver: DPoPProver {
    let calls = Mutex(0)

    func proof(method: String, url: String, accessToken: BearerToken?, nonce: String?) -> String? {
        let count = self.calls.withLock { calls in
            calls += 1
            return calls
        }
        return "\(count);\(method);\(url);\(accessToken?.value ?? "-");\(nonce ?? "-")"
    }
}

@Suite("auth.dpop on the data path: DPoP tokens, a proof per request, the upstream's nonce")
struct ProxyDPoPTests {
    /// The proof's parts: count, htm, htu, token, nonce.
    static func parts(_ request: RecordedRequest) -> [String] {
        (request.head.headers["dpop"].first ?? "").split(separator: ";").map(String.init)
    }

    @Test func eachRequestGoesWithTheDPoPSchemeAndAFreshProofOfItsExactTarget() async throws {
        let prover = SpellingProver()
        let tokens = RecordingTokenProvider(token: "tok", replacement: "tok2")
        try await ProxyFixture.with(upstreamPath: "/base", tokens: tokens, dpop: DPoPUpstream(prover: prover)) {
            proxy in
            let headers: HTTPHeaders = ["dpop": "the-client's-own", "authorization": "Bearer client"]
            for path in ["/x?q=1", "/y/z"] {
                let response = try await proxy.send(.POST, path, headers: headers, text: "b")
                #expect(response.status == 200)
            }
            let requests = proxy.upstream.requests
            #expect(requests.map { $0.head.headers["authorization"] } == [["DPoP tok"], ["DPoP tok"]])
            #expect(requests.map { $0.head.headers["dpop"].count } == [1, 1], "the client's proof is dropped")
            let base = "http://127.0.0.1:\(proxy.upstream.port)/base"
            #expect(Self.parts(requests[0]) == ["1", "POST", base + "/x", "tok", "-"], "htu has no query")
            #expect(Self.parts(requests[1]) == ["2", "POST", base + "/y/z", "tok", "-"])
        }
    }

    @Test func aNonceTheUpstreamAsksForIsSentInOneRetryWithTheSameToken() async throws {
        let prover = SpellingProver()
        let tokens = RecordingTokenProvider(token: "tok", replacement: "tok2")
        let responder = Responder { request in
            if Self.parts(request).last == "n1" { return .ok("served") }
            return .respond(
                status: .unauthorized,
                headers: [("www-authenticate", #"DPoP error="use_dpop_nonce""#), ("dpop-nonce", "n1")],
                body: "nonce, please"
            )
        }
        try await ProxyFixture.with(tokens: tokens, responder: responder, dpop: DPoPUpstream(prover: prover)) { proxy in
            let first = try await proxy.send(.GET, "/x")
            #expect(first.status == 200 && first.bodyText == "served")
            #expect(proxy.upstream.requests.map { Self.parts($0).last } == ["-", "n1"])
            #expect(proxy.upstream.requests.map { $0.head.headers["authorization"] } == [["DPoP tok"], ["DPoP tok"]])
            #expect(tokens.rejected.isEmpty, "a nonce is not a token problem: nothing is refreshed")
            // The nonce is kept: the next request carries it at once.
            let second = try await proxy.send(.GET, "/x")
            #expect(second.status == 200)
            #expect(proxy.upstream.requests.count == 3)
        }
    }

    @Test func aNonceAskedForAgainAfterTheRetryGoesToTheClient() async throws {
        let asked = Mutex(0)
        let responder = Responder { _ in
            let nonce = asked.withLock { count in
                count += 1
                return "n\(count)"
            }
            return .respond(
                status: .unauthorized,
                headers: [("www-authenticate", #"DPoP error="use_dpop_nonce""#), ("dpop-nonce", nonce)],
                body: "again"
            )
        }
        let tokens = RecordingTokenProvider(token: "tok", replacement: "tok2")
        try await ProxyFixture.with(tokens: tokens, responder: responder, dpop: DPoPUpstream(prover: SpellingProver()))
        {
            proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 401 && response.bodyText == "again")
            #expect(proxy.upstream.requests.count == 2, "one retry, as for any 401")
        }
    }

    @Test func aRequestReplayedOnANewConnectionGoesWithANewProof() async throws {
        // The upstream drops the reused connection when the second request arrives (a keep-alive
        // timeout): the request is replayed, and the proof it may have seen is not sent twice.
        let dropped = Mutex(false)
        let responder = Responder { request in
            if request.head.uri == "/2" && !dropped.withLock({ $0 }) {
                dropped.withLock { $0 = true }
                return .close
            }
            return .ok()
        }
        let tokens = RecordingTokenProvider(token: "tok", replacement: "tok2")
        try await ProxyFixture.with(tokens: tokens, responder: responder, dpop: DPoPUpstream(prover: SpellingProver()))
        {
            proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                let first = try await client.send(.GET, "/1")
                let second = try await client.send(.GET, "/2")
                #expect(first.status == 200 && second.status == 200)
            }
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/1", "/2", "/2"])
            #expect(proxy.upstream.requests.map { Self.parts($0).first } == ["1", "2", "3"])
        }
    }

    @Test func aNonceThatIsNotOneIsNeverRepeated() async throws {
        let responder = Responder { _ in .respond(status: .ok, headers: [("dpop-nonce", "bad\"nonce")], body: "") }
        let tokens = RecordingTokenProvider(token: "tok", replacement: "tok2")
        try await ProxyFixture.with(tokens: tokens, responder: responder, dpop: DPoPUpstream(prover: SpellingProver()))
        {
            proxy in
            _ = try await proxy.send(.GET, "/x")
            _ = try await proxy.send(.GET, "/x")
            #expect(proxy.upstream.requests.map { Self.parts($0).last } == ["-", "-"])
        }
    }
}
