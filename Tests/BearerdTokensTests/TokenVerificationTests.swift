import BearerdAuth
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdTokens

/// What the engine does with an access token that fails `auth.verify`.
@Suite("auth.verify in the token engine")
struct TokenVerificationTests {
    /// Refuses every token that starts with "forged".
    struct PrefixVerifier: TokenVerifier {
        func verify(
            _ token: BearerToken,
            transport: any TokenTransport,
            at serverTime: Date?
        ) async throws(TokenEngineError) {
            if token.value.hasPrefix("forged") { throw TokenEngineError.verification("its signature does not verify") }
        }
    }

    @Test func aTokenThatFailsIsNeverUsedAndTheRotatedRefreshTokenIsKept() async throws {
        let harness = TokenHarness(
            stored: StoredTokens(
                user: StoredSession(
                    refreshToken: Secret("refresh-0"),
                    accessToken: BearerToken("good-0"),
                    accessExpiresAt: ManualTokenClock().now.addingTimeInterval(30),
                    receivedAt: ManualTokenClock().now.addingTimeInterval(-3570)
                )
            ),
            verifier: PrefixVerifier()
        ) { _, index in
            // The first answer's access token is forged; the server has rotated the refresh token.
            FakeTokenEndpoint.tokens(access: index == 0 ? "forged-1" : "good-2", refresh: "refresh-\(index + 1)")
        }
        // 30 s before expiry the token is due: the refresh's answer is refused, the old token serves.
        #expect(try await harness.manager.token().value == "good-0")
        let status = await harness.manager.status()
        #expect(status.detail?.contains("failed auth.verify: its signature does not verify") == true, "\(status)")
        #expect(status.failuresInARow == 1)
        #expect(
            (try harness.store.load())?.user?.refreshToken == Secret("refresh-1"),
            "the rotated refresh token is kept"
        )
        #expect((try harness.store.load())?.user?.accessToken == BearerToken("good-0"))
        #expect(harness.logText.contains("failed verification"))
        #expect(!harness.logText.contains("forged-1"))

        // The retry (when the backoff says) sends the rotated refresh token, never the spent one,
        // and takes the good answer.
        harness.clock.advance(to: try #require(status.nextRefreshAt))
        await harness.manager.refresh(reason: .retry)
        #expect(try await harness.manager.token().value == "good-2")
        let sent = harness.endpoint.requests.map { FakeTokenEndpoint.form($0)["refresh_token"] }
        #expect(sent == ["refresh-0", "refresh-1"])
    }

    @Test func aLoginWhoseTokenFailsIsRefusedAndKeepsNothing() async throws {
        let harness = TokenHarness(seed: nil, verifier: PrefixVerifier()) { _, _ in
            FakeTokenEndpoint.tokens(access: "forged-1", refresh: "refresh-1")
        }
        do {
            try await harness.manager.logIn(username: "alice", password: Secret("pw"))
            Issue.record("a login whose token failed verification succeeded")
        } catch {
            #expect("\(error)".contains("failed auth.verify"))
        }
        #expect((try harness.store.load())?.user == nil)
    }
}
