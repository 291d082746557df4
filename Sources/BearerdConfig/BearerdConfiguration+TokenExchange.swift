import BearerdFiles
import BearerdTokens
import Foundation

extension BearerdConfiguration.Auth {
    /// `auth.token_exchange.*`: ``TokenExchangeSettings``, owned by the token engine.
    package typealias TokenExchange = TokenExchangeSettings
}

extension TokenExchangeSettings {
    /// Reads `auth.token_exchange.*`; `nil` when `subject_token_file` is not set (then no
    /// other key of it may be).
    static func reading(_ builder: inout ConfigBuilder, clientCredentials: Bool) -> Self? {
        typealias Keys = ConfigKeys.Auth.TokenExchange
        let others = [
            Keys.subjectTokenType, Keys.actorTokenFile, Keys.actorTokenType, Keys.requestedTokenType,
        ]
        guard let subject = builder.string(Keys.subjectTokenFile).map(builder.resolve) else {
            for key in others where builder.isSet(key) {
                builder.issue(key.name, "applies only with auth.token_exchange.subject_token_file")
            }
            for key in [Keys.audience, Keys.resource] where !builder.list(key).isEmpty {
                builder.issue(key.name, "applies only with auth.token_exchange.subject_token_file")
            }
            return nil
        }
        if clientCredentials {
            builder.issue(
                "auth.client_credentials",
                "set auth.client_credentials or auth.token_exchange, not both: both get the client's own token"
            )
        }
        if let problem = builder.secretFileProblem(path: subject, groupMayRead: true) {
            builder.issue(Keys.subjectTokenFile.name, problem)
        }
        let actor = builder.string(Keys.actorTokenFile).map(builder.resolve)
        if let actor, let problem = builder.secretFileProblem(path: actor, groupMayRead: true) {
            builder.issue(Keys.actorTokenFile.name, problem)
        }
        var exchange = Self(subjectTokenFile: subject, actorTokenFile: actor)
        exchange.subjectTokenType = Self.tokenType(&builder, Keys.subjectTokenType) ?? TokenType.jwt
        if builder.isSet(Keys.actorTokenType) && actor == nil {
            builder.issue(Keys.actorTokenType.name, "applies only with auth.token_exchange.actor_token_file")
        } else if actor != nil {
            exchange.actorTokenType = Self.tokenType(&builder, Keys.actorTokenType) ?? TokenType.jwt
        }
        exchange.requestedTokenType = Self.tokenType(&builder, Keys.requestedTokenType)
        exchange.audiences = builder.list(Keys.audience)
        for audience in exchange.audiences
        where audience.isEmpty || audience.utf8.count > 2048
            || audience.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
        {
            builder.issue(Keys.audience.name, "each audience must be 1 to 2048 printable characters")
        }
        exchange.resources = builder.list(Keys.resource)
        for resource in exchange.resources {
            // RFC 8693 §2.1: an absolute URI without a fragment.
            let url = URL(string: resource)
            if url?.scheme == nil || url?.fragment != nil || resource.utf8.count > 2048 {
                builder.issue(
                    Keys.resource.name,
                    "each resource must be an absolute URI without a fragment (got \"\(resource.prefix(80))\")"
                )
            }
        }
        return exchange
    }

    private static func tokenType(_ builder: inout ConfigBuilder, _ key: ConfigKeyDescriptor) -> String? {
        guard let text = builder.string(key) else { return nil }
        guard let uri = TokenType.uri(text) else {
            builder.issue(
                key.name,
                "must be jwt, id_token, access_token, refresh_token, saml1, saml2 or a token type URI (got \"\(text.prefix(80))\")"
            )
            return nil
        }
        return uri
    }
}

extension ConfigKeys.Auth {
    /// `auth.token_exchange.*`: RFC 8693 token exchange as the client's grant.
    package enum TokenExchange {
        static let subjectTokenFile = ConfigKeyDescriptor.text(
            "auth.token_exchange.subject_token_file",
            "a file of mode 0600 or 0640",
            reload: .restart,
            sample: .set("/var/run/secrets/tokens/bearerd"),
            doc: """
                The token this host already has from its platform: a Kubernetes projected service-account
                token, a CI job's OIDC token, a SPIFFE JWT-SVID, a cloud metadata token written to a file.
                bearerd reads it again before every exchange (platforms rotate it), and exchanges it for a
                token for the API a margin before that token expires, one exchange at a time. The file may
                be readable by its group (mode 0640), never by others. When the token server refuses the
                subject token (expired, not trusted), the current token serves until it expires and the
                exchange is tried again as soon as the file changes. No refresh token is kept. Works with
                every auth.client_auth (none, a secret, private_key_jwt with a key or an assertion file,
                tls_client_auth) and with auth.dpop. Takes the place of auth.client_credentials.
                """
        )
        static let subjectTokenType = ConfigKeyDescriptor.text(
            "auth.token_exchange.subject_token_type",
            "jwt, id_token, access_token, saml2 or a URI",
            default: "jwt",
            reload: .restart,
            sample: .default,
            doc: ""
        )
        static let actorTokenFile = ConfigKeyDescriptor.text(
            "auth.token_exchange.actor_token_file",
            "a file of mode 0600 or 0640",
            reload: .restart,
            sample: .commented("/var/run/secrets/tokens/actor"),
            doc: "A token of the party acting for the subject (delegation, RFC 8693 §1.1), and its type (default jwt)."
        )
        static let actorTokenType = ConfigKeyDescriptor.text(
            "auth.token_exchange.actor_token_type",
            "jwt, id_token, access_token, saml2 or a URI",
            reload: .restart,
            sample: .commented("jwt"),
            doc: ""
        )
        static let audience = ConfigKeyDescriptor.list(
            "auth.token_exchange.audience",
            "names of the target service",
            reload: .restart,
            doc: """
                Where the token is to be used: logical names (audience) and absolute URIs (resource),
                each sent as its own field; auth.scopes are sent as scope.
                """
        )
        static let resource = ConfigKeyDescriptor.list(
            "auth.token_exchange.resource",
            "absolute URIs",
            reload: .restart,
            doc: ""
        )
        static let requestedTokenType = ConfigKeyDescriptor.text(
            "auth.token_exchange.requested_token_type",
            "access_token, jwt or a URI",
            reload: .restart,
            sample: .commented("access_token"),
            doc: "The type of token asked for; not sent by default (the server's choice)."
        )

        static let section = ConfigSection(
            "auth.token_exchange",
            doc: """
                RFC 8693 token exchange: no long-lived secret on the host. Needs auth.token_url or
                auth.issuer and auth.client_id.
                """,
            commented: true,
            [
                .key(subjectTokenFile), .key(subjectTokenType), .key(actorTokenFile), .key(actorTokenType),
                .key(audience), .key(resource), .key(requestedTokenType),
            ]
        )
    }
}
