import BearerdAuth
import BearerdJOSE
import BearerdTestSupport
import BearerdTokens
import Foundation
import JWTKit
import Testing

/// The `private_key_jwt` assertions bearerd signs (RFC 7523 §3), checked by verifying them with
/// jwt-kit against the public key, on a manual clock.
@Suite("private_key_jwt client assertions")
struct ClientAssertionTests {
    static func pem(_ path: String) throws -> String { try String(contentsOfFile: path, encoding: .utf8) }

    /// A key collection that verifies what the private key signed with `algorithm`.
    static func verifier(publicKey: String, algorithm: String, kid: String) async throws -> JWTKeyCollection {
        let keys = JWTKeyCollection()
        let id = JWKIdentifier(string: kid)
        switch algorithm {
        case "RS256": await keys.add(rsa: try Insecure.RSA.PublicKey(pem: publicKey), digestAlgorithm: .sha256, kid: id)
        case "PS256": await keys.add(pss: try Insecure.RSA.PublicKey(pem: publicKey), digestAlgorithm: .sha256, kid: id)
        default: await keys.add(ecdsa: try ES256PublicKey(pem: publicKey), kid: id)
        }
        return keys
    }

    @Test(arguments: [("rsa:2048", nil, "RS256"), ("rsa:2048", "PS256", "PS256"), ("ec", nil, "ES256")])
    func anAssertionCarriesTheClaimsTheServerChecks(kind: String, configured: String?, algorithm: String) async throws {
        let files = try TestKeys.shared(kind, named: "client")
        let key = try ClientAssertionKey(
            pem: try Self.pem(files.privateKey),
            algorithm: configured.flatMap(ClientAssertionKey.Algorithm.init(rawValue:)),
            file: files.privateKey
        )
        #expect(key.algorithm.rawValue == algorithm)
        let start = Date(timeIntervalSince1970: 1_900_000_000)
        let clock = ManualTokenClock(now: start)
        let signer = JWTClientAssertionSigner(key: key, keyID: "key-2026", clock: clock)
        let first = try await signer.assertion(clientID: "client-7", audience: "https://idp.example/token")
        clock.advance(by: .seconds(30))
        let second = try await signer.assertion(clientID: "client-7", audience: "https://idp.example/token")

        let header = try Self.header(first.value)
        #expect(header == ["alg": algorithm, "kid": "key-2026", "typ": "JWT"])
        // The signature verifies with the public key alone (the claims' times are the manual
        // clock's, years from now, so they are read, not checked against today).
        let verifier = try await Self.verifier(
            publicKey: try Self.pem(files.publicKey),
            algorithm: algorithm,
            kid: "key-2026"
        )
        _ = try await verifier.verify(first.value, as: SignatureOnly.self)
        let claims = try await verifier.unverified(first.value, as: ClientAssertionClaims.self)
        #expect(claims.iss.value == "client-7" && claims.sub.value == "client-7")
        #expect(claims.aud.value == ["https://idp.example/token"])
        #expect(claims.iat.value == start)
        #expect(claims.exp.value.timeIntervalSince(claims.iat.value) == 60)
        let later = try await verifier.unverified(second.value, as: ClientAssertionClaims.self)
        #expect(later.jti.value != claims.jti.value, "a new jti for every request")
        #expect(later.iat.value == start.addingTimeInterval(30))
        #expect(!"\(first)".contains(first.value), "an assertion is a secret in logs")
    }

    /// Servers that read a NumericDate as an integer (glewlwyd) refuse `"iat":1795706588.647921`:
    /// every time claim is a JSON integer in the payload's text, whole seconds of the clock.
    @Test func anAssertionSaysItsTimesInWholeSeconds() async throws {
        let files = try TestKeys.shared("ec", named: "client")
        let key = try ClientAssertionKey(pem: try Self.pem(files.privateKey), algorithm: nil, file: files.privateKey)
        let clock = ManualTokenClock(now: Date(timeIntervalSince1970: 1_795_706_588.647921))
        let signer = JWTClientAssertionSigner(key: key, keyID: nil, clock: clock)
        let jws = try await signer.assertion(clientID: "client-7", audience: "https://idp.example/token").value
        let payload = try Self.part(jws, 1)
        let times = Dictionary(
            uniqueKeysWithValues: payload.matches(of: /"(iat|exp|nbf)":([^,}]*)/).map { (String($0.1), String($0.2)) }
        )
        #expect(times == ["iat": "1795706588", "exp": "1795706648"], "\(payload)")
    }

    /// A compact JWS's header, decoded from base64url JSON.
    static func header(_ jws: String) throws -> [String: String] {
        try JSONDecoder().decode([String: String].self, from: Data(try Self.part(jws, 0).utf8))
    }

    /// The text of a compact JWS's `index`th part, decoded from base64url.
    static func part(_ jws: String, _ index: Int) throws -> String {
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false)
        var text = String(parts[index]).replacingOccurrences(of: "-", with: "+").replacingOccurrences(
            of: "_",
            with: "/"
        )
        text += String(repeating: "=", count: (4 - text.count % 4) % 4)
        return String(decoding: try #require(Data(base64Encoded: text)), as: UTF8.self)
    }

    @Test func aKeyThatCannotSignIsRefusedWithWhatToDo() throws {
        let rsa = try TestKeys.shared("rsa:2048", named: "client")
        let small = try TestKeys.shared("rsa:1024", named: "small")
        let ec = try TestKeys.shared("ec", named: "client")
        let cases: [(String, ClientAssertionKey.Algorithm?, String)] = [
            (try Self.pem(rsa.privateKey), .es256, "RS256 or PS256"),
            (try Self.pem(ec.privateKey), .rs256, "ES256 only"),
            (try Self.pem(small.privateKey), nil, "2048 bits or more"),
            (try Self.pem(rsa.publicKey), nil, "no PEM private key"),
            ("not a key", nil, "no PEM private key"),
        ]
        for (pem, algorithm, says) in cases {
            do {
                _ = try ClientAssertionKey(pem: pem, algorithm: algorithm, file: "/etc/bearerd/client.key")
                Issue.record("accepted a key that cannot sign \(algorithm?.rawValue ?? "by default")")
            } catch {
                #expect(error.description.hasPrefix("auth.client_key_file: /etc/bearerd/client.key"))
                #expect(error.description.contains(says), "\(error)")
                #expect(!error.description.contains("BEGIN"), "no key material in the message")
            }
        }
    }
}

/// Verifies a signature alone.
struct SignatureOnly: JWTPayload {
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
