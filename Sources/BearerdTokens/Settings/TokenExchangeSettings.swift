import Foundation

/// `auth.token_exchange.*`: the client's token is had by RFC 8693 token exchange, trading a
/// token the platform gives this host (a Kubernetes projected service-account token, a CI
/// job's OIDC token, a SPIFFE JWT-SVID) for one for the API. On when `subject_token_file` is
/// set; it takes the place of the client_credentials grant.
package struct TokenExchangeSettings: Sendable, Equatable {
    /// `subject_token_file`, resolved: read again before every exchange.
    package var subjectTokenFile: String
    /// `subject_token_type`, as a URI.
    package var subjectTokenType: String
    /// `actor_token_file`, resolved, and `actor_token_type` (a URI).
    package var actorTokenFile: String?
    package var actorTokenType: String?
    /// `audience`: each sent as its own `audience` field.
    package var audiences: [String]
    /// `resource`: absolute URIs, each sent as its own `resource` field.
    package var resources: [String]
    /// `requested_token_type`, as a URI; not sent when `nil`.
    package var requestedTokenType: String?

    package init(
        subjectTokenFile: String,
        subjectTokenType: String = TokenType.jwt,
        actorTokenFile: String? = nil,
        actorTokenType: String? = nil,
        audiences: [String] = [],
        resources: [String] = [],
        requestedTokenType: String? = nil
    ) {
        self.subjectTokenFile = subjectTokenFile
        self.subjectTokenType = subjectTokenType
        self.actorTokenFile = actorTokenFile
        self.actorTokenType = actorTokenType
        self.audiences = audiences
        self.resources = resources
        self.requestedTokenType = requestedTokenType
    }

    /// The token type identifiers of RFC 8693 §3, and their short names in the config.
    package enum TokenType {
        package static let jwt = "urn:ietf:params:oauth:token-type:jwt"
        package static let shortNames = [
            "jwt": jwt,
            "id_token": "urn:ietf:params:oauth:token-type:id_token",
            "access_token": "urn:ietf:params:oauth:token-type:access_token",
            "refresh_token": "urn:ietf:params:oauth:token-type:refresh_token",
            "saml1": "urn:ietf:params:oauth:token-type:saml1",
            "saml2": "urn:ietf:params:oauth:token-type:saml2",
        ]

        /// A short name's URI, an absolute URI as written, or `nil`.
        package static func uri(_ text: String) -> String? {
            if let uri = Self.shortNames[text.lowercased()] { return uri }
            guard text.utf8.count <= 256, text.contains(":"),
                text.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }),
                let scheme = URL(string: text)?.scheme, !scheme.isEmpty
            else { return nil }
            return text
        }
    }
}
