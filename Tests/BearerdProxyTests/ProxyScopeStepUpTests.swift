import BearerdAuth
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("A 403 asking for more scope: reported, and retried once with a token that has it")
struct ProxyScopeStepUpTests {
    /// 403 `insufficient_scope` for any token but the admin one; a plain 403 on /plain.
    static let responder = Responder { request in
        if request.head.uri == "/plain" { return .respond(status: .forbidden, headers: [], body: "no") }
        if request.head.headers["authorization"] == ["Bearer admin-token"] {
            return .ok("\(request.head.method) admin \(request.bodyText)")
        }
        return .respond(
            status: .forbidden,
            headers: [("www-authenticate", #"Bearer error="insufficient_scope", scope="admin""#)],
            body: "needs admin"
        )
    }

    @Test func aStepUpTokenIsUsedForOneRetryWithTheBody() async throws {
        let tokens = RecordingTokenProvider(token: "plain-token")
        tokens.grantOnStepUp("admin-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            let response = try await proxy.send(.POST, "/admin/x", text: "the body")
            #expect(response.status == 200)
            #expect(response.bodyText == "POST admin the body")
            #expect(proxy.upstream.requests.map(\.bodyText) == ["the body", "the body"])
            #expect(tokens.challenges == [ScopeChallenge(kind: .insufficientScope, scopes: ["admin"])])
            #expect(proxy.logText.contains("retried=upstream_403_scope"), "\(proxy.logText)")
            #expect(tokens.rejected.isEmpty, "a 403 is not a refused token")
        }
    }

    @Test func withoutAStepUpThe403GoesToTheCallerWhole() async throws {
        let tokens = RecordingTokenProvider(token: "plain-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            let response = try await proxy.send(.GET, "/admin/x")
            #expect(response.status == 403)
            #expect(response.bodyText == "needs admin")
            #expect(response.head.headers["www-authenticate"].first?.contains("insufficient_scope") == true)
            #expect(proxy.upstream.requests.count == 1)
            #expect(tokens.challenges.count == 1)
        }
    }

    @Test func aBodyOverTheRetryLimitIsPassedOnAndStillReported() async throws {
        let tokens = RecordingTokenProvider(token: "plain-token")
        tokens.grantOnStepUp("admin-token")
        try await ProxyFixture.with(yaml: "proxy:\n  retry_body_limit: 1KiB", tokens: tokens, responder: Self.responder)
        {
            proxy in
            let response = try await proxy.send(.POST, "/admin/x", text: String(repeating: "x", count: 4096))
            #expect(response.status == 403)
            #expect(proxy.upstream.requests.count == 1)
            try await waitUntil { tokens.challenges.count == 1 }
        }
    }

    @Test func aPlain403AsksNothing() async throws {
        let tokens = RecordingTokenProvider(token: "plain-token")
        tokens.grantOnStepUp("admin-token")
        try await ProxyFixture.with(tokens: tokens, responder: Self.responder) { proxy in
            let response = try await proxy.send(.GET, "/plain")
            #expect(response.status == 403 && response.bodyText == "no")
            #expect(proxy.upstream.requests.count == 1 && tokens.challenges.isEmpty)
        }
    }
}
