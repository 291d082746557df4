import BearerdAuth
import BearerdFiles
import Foundation

extension ConfigBuilder {
    /// `auth.client_key_file`, `auth.client_key_id`, `auth.client_assertion_alg` and
    /// `auth.client_assertion_audience`: how `private_key_jwt` signs (RFC 7523 §2.2); or
    /// `auth.client_assertion_file`: an assertion the platform issued, sent as it is (workload
    /// identity federation). The key itself is parsed when the token source is made.
    mutating func clientAssertion(
        authentication: ClientAuthentication?,
        issuer: String?
    ) -> (keyFile: String?, keyID: String?, algorithm: String?, audience: String, assertionFile: String?) {
        let keyFile = self.string("auth.client_key_file").map(self.resolve)
        let assertionFile = self.string(ConfigKeys.Auth.clientAssertionFile).map(self.resolve)
        let keyID = self.string("auth.client_key_id")
        let algorithm = self.string("auth.client_assertion_alg")?.uppercased()
        let audience = self.string(ConfigKeys.Auth.clientAssertionAudience) ?? ""
        let keys = [
            ("auth.client_key_file", keyFile), ("auth.client_key_id", keyID), ("auth.client_assertion_alg", algorithm),
            ("auth.client_assertion_audience", self.string("auth.client_assertion_audience")),
            ("auth.client_assertion_file", assertionFile),
        ]
        guard authentication == .privateKeyJWT else {
            for (key, value) in keys where value != nil {
                self.issue(key, "applies only with auth.client_auth: private_key_jwt")
            }
            return (nil, nil, nil, audience, nil)
        }
        if let assertionFile {
            if keyFile != nil {
                self.issue(
                    "auth.client_assertion_file",
                    "set auth.client_key_file (bearerd signs) or auth.client_assertion_file (the platform signs), not both"
                )
            }
            for (key, value) in keys.dropFirst().dropLast() where value != nil {
                self.issue(
                    key,
                    "applies to assertions bearerd signs (auth.client_key_file), not to auth.client_assertion_file"
                )
            }
            if let problem = self.secretFileProblem(path: assertionFile, groupMayRead: true) {
                self.issue("auth.client_assertion_file", problem)
            }
            return (nil, nil, nil, audience, assertionFile)
        }
        if let keyFile {
            if let problem = self.secretFileProblem(path: keyFile) { self.issue("auth.client_key_file", problem) }
        } else {
            self.issue(
                "auth.client_key_file",
                "required with auth.client_auth: private_key_jwt (the client's PEM private key, mode 0600), or auth.client_assertion_file"
            )
        }
        if let keyID,
            keyID.isEmpty || keyID.utf8.count > 256
                || keyID.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value > 0x7E })
        {
            self.issue("auth.client_key_id", "must be 1 to 256 printable ASCII characters without spaces")
        }
        if let algorithm, !["RS256", "PS256", "ES256"].contains(algorithm) {
            self.issue("auth.client_assertion_alg", "must be RS256, PS256 or ES256 (got \"\(algorithm)\")")
        }
        switch audience {
        case "endpoint":
            break
        case "issuer":
            if issuer == nil {
                self.issue(
                    "auth.client_assertion_audience",
                    "issuer needs auth.issuer; with auth.token_url write the issuer's URL here"
                )
            }
        default:
            // A name the token server knows itself by, not a place bearerd reaches.
            self.checkHTTPURL(
                audience,
                key: "auth.client_assertion_audience",
                expected: "endpoint, issuer or an http(s) URL",
                reached: false
            )
        }
        return (keyFile, keyID, algorithm, audience, nil)
    }
}
