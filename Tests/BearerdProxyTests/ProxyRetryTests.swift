import BearerdAuth
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("A 401 from the upstream: one refresh, one retry")
struct ProxyRetryTests {
    /// 401 for the old token; otherwise 200 echoing what arrived.
    static let responder = Responder { request in
        if request.head.headers["authorization"] == ["Bearer old-token"] {
            return .respond(
                status: .unauthorized,
                headers: [("www-authenticate", "Bearer error=\"invalid_token\"")],
                body: "expired"
            )
        }
        return .ok("\(request.head.method) \(request.head.headers["authorization"].first ?? "-") \(request.bodyText)")
    }

    @Test func aRejectedRequestIsRetriedOnceWithTheNewToken() async throws {
        let tokens = RecordingTokenProvider(token: "old-token", replacement: "new-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 200)
            #expect(response.bodyText == "GET Bearer new-token ")
            #expect(
                proxy.upstream.requests.map { $0.head.headers["authorization"] } == [
                    ["Bearer old-token"], ["Bearer new-token"],
                ]
            )
            #expect(tokens.rejected.map(\.value) == ["old-token"])
            #expect(proxy.logText.contains("retried=upstream_401"))
            try await waitUntil { tokens.freshAnswers.count == 1 }
            #expect(tokens.freshAnswers.map(\.token.value) == ["new-token"])
            #expect(tokens.freshAnswers.map(\.refused) == [false])
        }
    }

    @Test func aSmallBodyIsSentAgain() async throws {
        let tokens = RecordingTokenProvider(token: "old-token", replacement: "new-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            let response = try await proxy.send(.POST, "/x", text: "the body")
            #expect(response.status == 200)
            #expect(response.bodyText == "POST Bearer new-token the body")
            #expect(proxy.upstream.requests.map(\.bodyText) == ["the body", "the body"])
        }
    }

    @Test func aBodyOverTheRetryLimitIsNotRetried() async throws {
        let tokens = RecordingTokenProvider(token: "old-token", replacement: "new-token")
        try await ProxyFixture.with(
            yaml: "proxy:\n  retry_body_limit: 1KiB",
            tokens: tokens,
            responder: Self.responder
        ) { proxy in
            let response = try await proxy.send(.POST, "/x", text: String(repeating: "x", count: 4096))
            #expect(response.status == 401)
            #expect(response.bodyText == "expired")
            #expect(proxy.upstream.requests.count == 1)
            try await waitUntil { tokens.rejected.count == 1 }
        }
    }

    @Test func aMethodNotListedIsNotRetried() async throws {
        let tokens = RecordingTokenProvider(token: "old-token", replacement: "new-token")
        try await ProxyFixture.with(yaml: "proxy:\n  retry_methods: [GET]", tokens: tokens, responder: Self.responder) {
            proxy in
            let response = try await proxy.send(.DELETE, "/x")
            #expect(response.status == 401)
            #expect(proxy.upstream.requests.count == 1)
        }
    }

    @Test func neverASecondRetry() async throws {
        let tokens = RecordingTokenProvider(token: "old-token", replacement: "new-token")
        try await ProxyFixture.with(
            tokens: tokens,
            responder: Responder { _ in .respond(status: .unauthorized, headers: [], body: "still no") }
        ) { proxy in
            let response = try await proxy.send(.GET, "/x")
            #expect(response.status == 401 && response.bodyText == "still no")
            #expect(proxy.upstream.requests.count == 2)
            // The provider hears that the fresh token was refused too (a path that refuses any).
            try await waitUntil { tokens.freshAnswers.count == 1 }
            #expect(tokens.freshAnswers.map(\.refused) == [true])
            #expect(tokens.rejected.count == 1)
        }
    }

    @Test func withoutANewTokenThe401GoesToTheClientIntact() async throws {
        let tokens = RecordingTokenProvider(token: "old-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                for _ in 0..<2 {
                    let response = try await client.send(.GET, "/x")
                    #expect(response.status == 401)
                    #expect(response.bodyText == "expired")
                    #expect(response.head.headers["www-authenticate"] == ["Bearer error=\"invalid_token\""])
                }
            }
            #expect(proxy.upstream.requests.count == 2, "one per request: no retry without a new token")
        }
    }
}
