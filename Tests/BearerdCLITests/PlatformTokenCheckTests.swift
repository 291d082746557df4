import BearerdTestSupport
import Foundation
import Testing

/// `check-config` with the platform's token files (token exchange, a platform assertion): their
/// modes, whether each reads as one token, and its `sub` and `exp` — never the token.
@Suite("check-config and the platform's token files", .serialized)
struct PlatformTokenCheckTests {
    /// An unsigned JWT for `sub` expiring `expiresIn` seconds from now.
    static func token(_ sub: String, expiresIn: Int) -> String {
        func encode(_ text: String) -> String {
            Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let exp = Int(Date().timeIntervalSince1970) + expiresIn
        return encode(#"{"alg":"ES256"}"#) + "." + encode(#"{"sub":"\#(sub)","exp":\#(exp)}"#) + ".c2ln"
    }

    static func config(_ directory: TemporaryDirectory, subject: String, assertion: String) throws -> String {
        try directory.write(
            """
            upstream:
              url: http://127.0.0.1:9
            auth:
              token_url: http://127.0.0.1:9/token
              client_id: workload
              client_auth: private_key_jwt
              client_assertion_file: \(assertion)
              token_exchange:
                subject_token_file: \(subject)
                audience: ["api://hello"]
            """,
            to: "bearerd.yaml"
        )
    }

    @Test func theFilesAreCheckedAndDescribedWithoutTheirTokens() async throws {
        let directory = try TemporaryDirectory()
        let live = Self.token("system:serviceaccount:apps:web", expiresIn: 3600)
        let expired = Self.token("system:serviceaccount:apps:bearerd", expiresIn: -60)
        let subject = try directory.write(live, to: "subject", mode: 0o640)
        let assertion = try directory.write(expired, to: "assertion")
        let config = try Self.config(directory, subject: subject, assertion: assertion)
        let result = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(
            result.stdout.contains(
                "note: auth.token_exchange.subject_token_file: a JWT, sub system:serviceaccount:apps:web, expires at"
            ),
            "\(result.stdout)"
        )
        #expect(
            result.stdout.contains(
                "note: auth.client_assertion_file: the token (sub system:serviceaccount:apps:bearerd, expired at"
            )
        )
        #expect(!result.stdout.contains(live) && !result.stdout.contains(expired))

        // Readable by others: refused, naming the key.
        chmod(subject, 0o644)
        let open = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(open.status != 0)
        #expect(
            open.stderr.contains("auth.token_exchange.subject_token_file") && open.stderr.contains("0644"),
            "\(open.stderr)"
        )

        // Two tokens in one file: refused.
        chmod(subject, 0o600)
        try directory.write(live + "\n" + live, to: "subject")
        let two = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(two.status != 0)
        #expect(two.stderr.contains("must hold one token alone"), "\(two.stderr)")
        #expect(!two.stderr.contains(live))
    }

    @Test func keysThatDoNotApplyAreRefused() async throws {
        let directory = try TemporaryDirectory()
        let subject = try directory.write(Self.token("a", expiresIn: 60), to: "subject")
        let config = try directory.write(
            """
            upstream:
              url: http://127.0.0.1:9
            auth:
              token_url: http://127.0.0.1:9/token
              client_id: workload
              client_credentials: true
              client_assertion_file: \(subject)
              token_exchange:
                subject_token_file: \(subject)
                actor_token_type: jwt
                resource: ["relative/path"]
                subject_token_type: "not a type"
            """,
            to: "bearerd.yaml"
        )
        let result = try await BearerdProcess.run(["check-config", "--config", config])
        #expect(result.status != 0)
        for expected in [
            "auth.client_credentials: set auth.client_credentials or auth.token_exchange, not both",
            "auth.client_assertion_file: applies only with auth.client_auth: private_key_jwt",
            "auth.token_exchange.actor_token_type: applies only with auth.token_exchange.actor_token_file",
            "auth.token_exchange.resource: each resource must be an absolute URI",
            "auth.token_exchange.subject_token_type: must be jwt",
        ] {
            #expect(result.stderr.contains(expected), "\(expected)\n\(result.stderr)")
        }
    }
}
