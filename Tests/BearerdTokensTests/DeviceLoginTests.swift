import BearerdAuth
import BearerdTestSupport
import Foundation
import Synchronization
import Testing

@testable import BearerdTokens

/// RFC 8628 against an in-process fake: the prompt, polling at the server's interval, slow_down.
@Suite("Device login (RFC 8628)", .timeLimit(.minutes(1)))
struct DeviceLoginTests {
    static let authorization = #"""
        {"device_code":"device-code-secret-1","user_code":"WDJB-MJHT","verification_uri":"https://auth.example/device",
         "verification_uri_complete":"https://auth.example/device?user_code=WDJB-MJHT","expires_in":60,"interval":5}
        """#

    /// Answers polls with the errors in `answers` in order, then with tokens.
    static func harness(_ answers: [String]) -> TokenHarness {
        TokenHarness(source: SessionCommandTests.source, seed: nil) { request, index in
            if request.url.hasSuffix("/device") { return FakeTokenEndpoint.json(Self.authorization) }
            let poll = index - 1
            if poll < answers.count {
                return FakeTokenEndpoint.json(#"{"error":"\#(answers[poll])"}"#, status: 400)
            }
            return FakeTokenEndpoint.tokens(access: "device-access", refresh: "device-refresh")
        }
    }

    /// Runs the login, moving the manual clock to each sleep's end; returns how it ended, the
    /// prompts shown, and the second of each poll.
    static func run(_ harness: TokenHarness) async throws -> (Result<Void, TokenEngineError>, [DevicePrompt], [Double])
    {
        let prompts = Mutex<[DevicePrompt]>([])
        let done = Mutex(false)
        let login = Task {
            defer { done.withLock { $0 = true } }
            do {
                try await harness.manager.logInWithDevice { prompt in prompts.withLock { $0.append(prompt) } }
                return Result<Void, TokenEngineError>.success(())
            } catch let error as TokenEngineError {
                return .failure(error)
            } catch {
                return .failure(TokenEngineError.login("unexpected: \(error)"))
            }
        }
        var polls: [Double] = []
        for _ in 0..<100_000 where !done.withLock({ $0 }) {
            guard let deadline = harness.clock.nextDeadline else {
                await Task.yield()
                continue
            }
            polls.append(harness.offset(deadline)!)
            harness.clock.advance(to: deadline)
        }
        return (await login.value, prompts.withLock { $0 }, polls)
    }

    @Test func itPromptsPollsAtTheIntervalAndSlowsDownBy5SecondsOnSlowDown() async throws {
        let harness = Self.harness(["authorization_pending", "slow_down", "authorization_pending"])
        let (result, prompts, polls) = try await Self.run(harness)
        #expect(throws: Never.self) { try result.get() }
        #expect(
            prompts == [
                DevicePrompt(
                    userCode: "WDJB-MJHT",
                    verificationURI: "https://auth.example/device",
                    verificationURIComplete: "https://auth.example/device?user_code=WDJB-MJHT",
                    expiresIn: 60
                )
            ]
        )
        // Every 5 s; after slow_down every 10 s.
        #expect(polls == [5, 10, 20, 30])
        let form = harness.endpoint.requests.dropFirst().map(FakeTokenEndpoint.form)
        #expect(form.allSatisfy { $0["grant_type"] == "urn:ietf:params:oauth:grant-type:device_code" })
        #expect(form.allSatisfy { $0["device_code"] == "device-code-secret-1" })
        #expect(try await harness.manager.token() == BearerToken("device-access"))
        #expect(try harness.store.load()?.user?.refreshToken == Secret("device-refresh"))
        #expect(await harness.manager.status().lastRefreshGrant == "device_code")
        #expect(!harness.logText.contains("device-code-secret-1") && !harness.logText.contains("device-refresh"))
    }

    @Test(arguments: [
        ("access_denied", "refused"),
        ("expired_token", "expired"),
        ("invalid_client", "invalid_client"),
    ])
    func aRefusalEndsTheLogin(error: String, says: String) async throws {
        let harness = Self.harness(["authorization_pending", error])
        let (result, _, polls) = try await Self.run(harness)
        #expect(polls == [5, 10])
        #expect(throws: TokenEngineError.self) { try result.get() }
        if case .failure(let failure) = result { #expect(failure.message.contains(says)) }
        #expect(await harness.manager.status().session == nil, "no user session")
        #expect(try harness.store.load()?.user == nil)
    }

    @Test func pollingStopsWhenTheCodeExpires() async throws {
        let harness = Self.harness(Array(repeating: "authorization_pending", count: 100))
        let (result, _, polls) = try await Self.run(harness)
        #expect(polls == [5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55])
        if case .failure(let failure) = result {
            #expect(failure.message.contains("expired"))
        } else {
            Issue.record("a login past the code's expiry succeeded")
        }
    }
}
