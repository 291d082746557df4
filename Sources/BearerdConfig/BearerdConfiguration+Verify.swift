import BearerdAuth
import BearerdFiles
import BearerdTokens
import Foundation

extension BearerdConfiguration.Auth {
    /// `auth.verify.*`: how an access token is checked before it is used.
    package struct Verify: Sendable, Equatable {
        /// Where the issuer's signing keys are.
        package enum Keys: Sendable, Equatable {
            /// `auth.verify.jwks_uri`: a URL.
            case jwks(String)
            /// `auth.verify.jwks_uri: discover`: the `jwks_uri` of auth.issuer's metadata.
            case discovered
            /// `auth.verify.secret_file`, resolved: an HS256 secret.
            case secret(String)
        }

        package var keys: Keys
        /// `auth.verify.issuer`: the `iss` required (default `auth.issuer`).
        package var issuer: String?
        /// `auth.verify.audience`: a value `aud` must hold.
        package var audience: String?

        package init(keys: Keys, issuer: String?, audience: String?) {
            self.keys = keys
            self.issuer = issuer
            self.audience = audience
        }

        /// `auth.verify.*`: on when `jwks_uri` or `secret_file` is set.
        static func reading(_ builder: inout ConfigBuilder, source: BearerdConfiguration.Auth.Source) -> Self? {
            typealias Key = ConfigKeys.Auth.Verify
            let jwks = builder.string(Key.jwksURI)
            let secret = builder.string(Key.secretFile).map(builder.resolve)
            var issuer = builder.string(Key.issuer)
            let audience = builder.string(Key.audience)
            let keys: Keys
            switch (jwks, secret) {
            case (nil, nil):
                for (key, value) in [("auth.verify.issuer", issuer), ("auth.verify.audience", audience)]
                where value != nil {
                    builder.issue(
                        key,
                        "applies with auth.verify.jwks_uri or auth.verify.secret_file, which say how to check"
                    )
                }
                return nil
            case (_?, _?):
                builder.issue(
                    "auth.verify.secret_file",
                    "set auth.verify.jwks_uri or auth.verify.secret_file, not both"
                )
                return nil
            case ("discover", nil):
                keys = .discovered
            case (let url?, nil):
                builder.checkHTTPURL(url, key: "auth.verify.jwks_uri", expected: "discover or an http(s) URL")
                keys = .jwks(url)
            case (nil, let path?):
                if let problem = builder.secretFileProblem(path: path) {
                    builder.issue("auth.verify.secret_file", problem)
                }
                keys = .secret(path)
            }
            switch source {
            case .staticFile:
                builder.issue("auth.verify", "does not apply to a static token: bearerd injects it as it is")
            case .oauth2(let oauth2):
                if keys == .discovered, oauth2.issuer == nil {
                    builder.issue(
                        "auth.verify.jwks_uri",
                        "discover needs auth.issuer: with auth.token_url give the JWKS URL"
                    )
                }
                issuer = issuer ?? oauth2.issuer
            case .command:
                builder.issue(
                    "auth.verify",
                    "does not apply to auth.command: the program on the host is trusted as a static token file is"
                )
            case .json:
                if keys == .discovered {
                    builder.issue("auth.verify.jwks_uri", "discover needs auth.issuer: give the JWKS URL")
                }
            }
            return Self(keys: keys, issuer: issuer, audience: audience)
        }
    }
}

extension ConfigKeys.Auth {
    /// `auth.verify.*`: checking each JWT access token before it is used.
    package enum Verify {
        static let jwksURI = ConfigKeyDescriptor.text(
            "auth.verify.jwks_uri",
            "an https URL, or discover",
            reload: .restart,
            sample: .set("discover"),
            doc: """
                The issuer's JWKS: a URL, or discover (the jwks_uri of auth.issuer's metadata). It is
                kept, and fetched again for a kid it does not hold (a key rollover) or after an hour, at
                most once every 30 s. Only asymmetric algorithms (RS*, PS*, ES*) are accepted from it.
                """
        )
        static let secretFile = ConfigKeyDescriptor.text(
            "auth.verify.secret_file",
            "a file of mode 0600",
            reload: .restart,
            sample: .commented("/etc/bearerd/hs256.key"),
            doc: """
                Or a secret shared with the issuer (HS256 only), mode 0600. Whoever reads it can mint tokens
                the upstream accepts (the same secret signs and checks): keep it as secret as the issuer's own.
                """
        )
        static let issuer = ConfigKeyDescriptor.text(
            "auth.verify.issuer",
            "the issuer's URL",
            reload: .restart,
            sample: .set("https://auth.example.com"),
            doc: """
                The iss required (default: auth.issuer) and a value aud must hold (default: not checked).
                nbf and exp are checked with 60 s of clock skew.
                """
        )
        static let audience = ConfigKeyDescriptor.text(
            "auth.verify.audience",
            "a value the aud claim must hold",
            reload: .restart,
            sample: .set("https://api.example.com"),
            doc: ""
        )

        static let section = ConfigSection(
            "auth.verify",
            doc: """
                Check every JWT access token before it is used: its signature against the issuer's keys and
                its claims. A token that fails is never sent upstream: the refresh that brought it counts as
                failed (logged with the reason, shown by `status`), the current token serves until it
                expires, and a refresh token that answer rotated is kept. Opaque tokens cannot be checked:
                leave this off for them.
                """,
            commented: true,
            [.key(jwksURI), .key(secretFile), .key(issuer), .key(audience)]
        )
    }
}
