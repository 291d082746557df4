/// How bearerd proves to the token server which client it is (`auth.client_auth`, RFC 6749
/// §2.3 and OAuth 2.0 Token Endpoint Authentication Methods). Shared by the config, which reads
/// it, and the token source, which uses it, so that neither compares strings.
package enum ClientAuthentication: String, Sendable, CaseIterable {
    /// The client id and secret in HTTP Basic (RFC 6749 §2.3.1).
    case clientSecretBasic = "client_secret_basic"
    /// The client id and secret in the form body (RFC 6749 §2.3.1).
    case clientSecretPost = "client_secret_post"
    /// RFC 7523 §2.2: a JWT signed with the client's private key, one per request.
    case privateKeyJWT = "private_key_jwt"
    /// RFC 8705 §2: the client certificate the transport presents in TLS proves the client.
    case tlsClientAuth = "tls_client_auth"
    /// A public client: the client id only.
    case none

    /// Whether it sends the client secret (`auth.client_secret_file` is required).
    package var sendsSecret: Bool { self == .clientSecretBasic || self == .clientSecretPost }
}
