/// What the proxy does with an `Authorization` header sent by the client (`proxy.client_authorization`).
package enum ClientAuthorizationPolicy: String, Sendable, Hashable, CaseIterable {
    /// Drop it and send bearerd's token (default).
    case replace
    /// Forward the client's header unchanged and add no token.
    case keep
    /// Refuse the request with 400.
    case reject
}
