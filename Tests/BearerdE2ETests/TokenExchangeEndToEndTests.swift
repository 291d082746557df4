import BearerdTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

/// No long-lived secret on the host: bearerd exchanges the platform's token (RFC 8693) and
/// authenticates with the platform's assertion (workload identity federation), against the
/// test IdP's strict implementation of both (`scripts/peers/idp`: signature, `exp`, `iss`, `aud`
/// of every platform token, RFC 8693's error codes).
@Suite(
    "Token exchange and workload identity against authlib",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct TokenExchangeEndToEndTests {
    typealias Daemon = EnterpriseClientAuthTests.Daemon

    /// Writes `token` to `file` as a platform does: a new file renamed over the old one.
    static func renew(_ file: String, with token: String) throws {
        let temporary = file + ".new"
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        chmod(temporary, 0o600)
        rename(temporary, file)
    }

    static func status(_ daemon: Daemon) async throws -> String {
        let status = try await BearerdProcess.run(["status", "-c", daemon.config])
        return status.stdout
    }

    @Test func theSubjectTokenIsReadAgainRotatedRefusedAndRenewed() async throws {
        let directory = try TemporaryDirectory()
        let platform = try TestKeys.make("ec", named: "platform", in: directory)
        let stranger = try TestKeys.make("ec", named: "stranger", in: directory)
        let idp = try await IdentityProvider.start(ttl: 3, platformKeys: platform.publicKey)
        let subject = directory.path + "/subject-token"
        try Self.renew(
            subject,
            with: try IdentityProvider.mintPlatformToken(key: platform.privateKey, subject: "apps:web-1")
        )
        try await EnterpriseClientAuthTests.against(idp) { group in
            let bearerd = try await EnterpriseClientAuthTests.serve(
                """
                  client_id: exchange-public
                  client_auth: none
                  token_exchange:
                    subject_token_file: \(subject)
                    audience: ["api://hello"]
                """,
                idp: idp,
                directory: directory
            )
            let first = try await EnterpriseClientAuthTests.get(bearerd, group: group)
            #expect(first.status == 200 && first.bodyText.contains("apps:web-1"), "\(first.bodyText)")
            let status = try await Self.status(bearerd)
            #expect(status.contains("token exchange of \(subject)"), "\(status)")
            #expect(status.contains("subject expires:") && status.contains("apps:web-1"), "\(status)")

            // The platform rotates the file: the next exchange (a margin before the 3 s token
            // expires) sends the new one.
            try Self.renew(
                subject,
                with: try IdentityProvider.mintPlatformToken(key: platform.privateKey, subject: "apps:web-2")
            )
            try await waitUntil(.seconds(10), every: .milliseconds(200)) {
                (try? await EnterpriseClientAuthTests.get(bearerd, group: group))?.bodyText.contains("apps:web-2")
                    == true
            }
            #expect(idp.marks.contains("token-exchange ok none - sub=apps:web-2"), "\(idp.marks)")

            // Expired in the file: nothing is sent, and status says when it expired.
            let sentBefore = idp.marks.count
            try Self.renew(
                subject,
                with: try IdentityProvider.mintPlatformToken(
                    key: platform.privateKey,
                    subject: "apps:web-3",
                    expiresIn: -60
                )
            )
            try await waitUntil(.seconds(10), every: .milliseconds(200)) {
                (try? await Self.status(bearerd))?.contains("expired at") == true
            }
            let expired = try await Self.status(bearerd)
            #expect(expired.contains("auth.token_exchange.subject_token_file"), "\(expired)")
            #expect(!idp.marks.dropFirst(sentBefore).contains { $0.contains("sub=apps:web-3") }, "\(idp.marks)")

            // Signed by a key the server does not trust: the server refuses it (RFC 8693's
            // invalid_request), and bearerd says which file to look at.
            try Self.renew(
                subject,
                with: try IdentityProvider.mintPlatformToken(key: stranger.privateKey, subject: "apps:web-4")
            )
            try await waitUntil(.seconds(10), every: .milliseconds(200)) {
                idp.marks.contains { $0.hasPrefix("token-exchange 400") && $0.hasSuffix("sub=apps:web-4") }
            }
            try await waitUntil(.seconds(5), every: .milliseconds(100)) {
                (try? await Self.status(bearerd))?.contains("refused the token exchange (invalid_request)") == true
            }
            let refused = try await Self.status(bearerd)
            #expect(refused.contains("subject_token_file"), "\(refused)")

            // Renewed: taken within a few seconds, without waiting for the backoff.
            try Self.renew(
                subject,
                with: try IdentityProvider.mintPlatformToken(key: platform.privateKey, subject: "apps:web-5")
            )
            try await waitUntil(.seconds(6), every: .milliseconds(200)) {
                (try? await EnterpriseClientAuthTests.get(bearerd, group: group))?.bodyText.contains("apps:web-5")
                    == true
            }
            let log = bearerd.process.stderr
            for token in [try String(contentsOfFile: subject, encoding: .utf8)] {
                #expect(
                    !log.contains(token.trimmingCharacters(in: .whitespacesAndNewlines)),
                    "no subject token in the log"
                )
            }
            #expect(!log.contains("eyJ"), "no JWT in the log")
        }
    }

    @Test func aRefusalThatIsNotTheSubjectsFaultNamesTheKeyToFix() async throws {
        let directory = try TemporaryDirectory()
        let platform = try TestKeys.make("ec", named: "platform", in: directory)
        let idp = try await IdentityProvider.start(ttl: 60, platformKeys: platform.publicKey)
        let subject = directory.path + "/subject-token"
        try Self.renew(
            subject,
            with: try IdentityProvider.mintPlatformToken(key: platform.privateKey, subject: "apps:web-1")
        )
        try await EnterpriseClientAuthTests.against(idp) { group in
            let bearerd = try await EnterpriseClientAuthTests.serve(
                """
                  client_id: exchange-public
                  token_exchange:
                    subject_token_file: \(subject)
                    audience: ["api://not-registered"]
                """,
                idp: idp,
                directory: directory
            )
            let answer = try await EnterpriseClientAuthTests.get(bearerd, group: group)
            #expect(answer.status == 503, "\(answer.bodyText)")
            // Between attempts (`waiting`) the status names the key; while the next attempt is in
            // flight (`refreshing`) it shows only the last result, so it is read until it does.
            try await waitUntil(.seconds(5), every: .milliseconds(100)) {
                let status = (try? await Self.status(bearerd)) ?? ""
                return status.contains("invalid_target") && status.contains("check auth.token_exchange.audience")
            }
            #expect(idp.marks.allSatisfy { $0.hasPrefix("token-exchange 400") }, "\(idp.marks)")
            #expect(bearerd.process.isRunning, "still serving")
        }
    }

    @Test func thePlatformsTokenIsTheClientAssertionForEitherGrant() async throws {
        let directory = try TemporaryDirectory()
        let platform = try TestKeys.make("rsa:2048", named: "platform", in: directory)
        let idp = try await IdentityProvider.start(ttl: 60, platformKeys: platform.publicKey)
        let assertion = directory.path + "/azure-identity-token"
        try Self.renew(
            assertion,
            with: try IdentityProvider.mintPlatformToken(
                key: platform.privateKey,
                subject: "system:serviceaccount:apps:bearerd"
            )
        )
        try await EnterpriseClientAuthTests.against(idp) { group in
            // client_credentials, authenticated by the platform's token: no secret, no key.
            let bearerd = try await EnterpriseClientAuthTests.serve(
                """
                  client_id: fed-client
                  client_auth: private_key_jwt
                  client_assertion_file: \(assertion)
                  client_credentials: true
                """,
                idp: idp,
                directory: directory
            )
            let answer = try await EnterpriseClientAuthTests.get(bearerd, group: group)
            #expect(answer.status == 200, "\(answer.bodyText)")
            #expect(idp.marks == ["client_credentials ok federated_jwt -"], "\(idp.marks)")
            bearerd.process.signal(SIGTERM)
            _ = try await bearerd.process.wait()

            // The same assertion authenticates a token exchange of the same platform token.
            let exchange = try await EnterpriseClientAuthTests.serve(
                """
                  client_id: fed-client
                  client_auth: private_key_jwt
                  client_assertion_file: \(assertion)
                  token_exchange:
                    subject_token_file: \(assertion)
                """,
                idp: idp,
                directory: directory
            )
            let exchanged = try await EnterpriseClientAuthTests.get(exchange, group: group)
            #expect(exchanged.status == 200, "\(exchanged.bodyText)")
            #expect(
                idp.marks.last == "token-exchange ok federated_jwt - sub=system:serviceaccount:apps:bearerd",
                "\(idp.marks)"
            )
        }
    }

    @Test(arguments: ["client_secret_basic", "private_key_jwt", "none", "dpop"])
    func anExchangeAuthenticatesAsTheClientDoesAndBindsWithDPoP(_ kind: String) async throws {
        let directory = try TemporaryDirectory()
        let platform = try TestKeys.make("ec", named: "platform", in: directory)
        let client = try TestKeys.make("ec", named: "client", in: directory)
        let idp = try await IdentityProvider.start(
            ttl: 60,
            clientKeys: client.publicKey,
            dpopNonceSeconds: kind == "dpop" ? 5 : nil,
            platformKeys: platform.publicKey
        )
        let subject = directory.path + "/subject-token"
        try Self.renew(
            subject,
            with: try IdentityProvider.mintPlatformToken(key: platform.privateKey, subject: "apps:\(kind)")
        )
        let secret = try directory.write("secret-pass\n", to: "secret")
        let clientKeys: String
        let method: String
        switch kind {
        case "private_key_jwt":
            clientKeys =
                "  client_id: jwt-client\n  client_auth: private_key_jwt\n  client_key_file: \(client.privateKey)"
            method = "private_key_jwt"
        case "none":
            clientKeys = "  client_id: exchange-public"
            method = "none"
        case "dpop":
            clientKeys = "  client_id: secret-client\n  client_secret_file: \(secret)\n  dpop: true"
            method = "client_secret_basic"
        default:
            clientKeys = "  client_id: secret-client\n  client_secret_file: \(secret)"
            method = "client_secret_basic"
        }
        try await EnterpriseClientAuthTests.against(idp) { group in
            let bearerd = try await EnterpriseClientAuthTests.serve(
                clientKeys + "\n  token_exchange:\n    subject_token_file: \(subject)",
                idp: idp,
                directory: directory
            )
            let answer = try await EnterpriseClientAuthTests.get(
                bearerd,
                kind == "dpop" ? "/api/dpop" : "/api/hello",
                group: group
            )
            #expect(answer.status == 200, "\(answer.bodyText)")
            #expect(idp.marks.last == "token-exchange ok \(method) - sub=apps:\(kind)", "\(idp.marks)")
        }
    }
}
