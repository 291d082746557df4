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
            doc: "Or a secret shared with the issuer (HS256 only), mode 0600:"
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
