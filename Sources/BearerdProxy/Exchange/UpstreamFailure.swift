/// What an exchange does when its upstream connection fails or closes before the response
/// ended. A value and a rule, apart from the channel: the handler gathers the facts, asks
/// ``action``, and carries it out (`ProxyHandler.upstreamFailed`).
///
/// The rule is nginx's `proxy_next_upstream error` and Go's `http.Transport` rule for a pooled
/// connection the server had already closed: send the request once more on a fresh connection
/// only when nothing of the response reached the client, the request went whole and had no body,
/// and repeating it cannot do anything twice (an idempotent method, RFC 9110 §9.2.2).
struct UpstreamFailure: Equatable {
    /// What bearerd does about it.
    enum Action: Equatable {
        /// Part of the response reached the client: nothing more can be said on that connection;
        /// close it.
        case abandon
        /// Send the request once more on a fresh connection; `reprove`: with a new DPoP proof
        /// (the one sent may have reached the upstream, and a proof is for one sending).
        case replay(reprove: Bool)
        /// Answer the client 502.
        case fail
    }

    /// A response head already went to the client.
    var responseStarted: Bool
    /// The connection had carried an earlier request: a pooled one the upstream may have closed
    /// while it sat idle.
    var connectionReused: Bool
    /// This exchange was replayed once already.
    var replayed: Bool
    /// The whole request went upstream.
    var requestEnded: Bool
    /// Bytes of request body sent.
    var requestBodyBytes: Int
    /// The request's method is idempotent.
    var idempotent: Bool
    /// The upstream answered bytes that are not an HTTP response (a broken upstream, not a
    /// closed connection: sending the request again would only ask it again).
    var malformedResponse: Bool
    /// Requests carry DPoP proofs (`auth.dpop`).
    var provesPossession: Bool

    var action: Action {
        if self.responseStarted { return .abandon }
        guard self.connectionReused, !self.replayed, !self.malformedResponse else { return .fail }
        // An idempotent method only: the upstream may have acted on a POST before it closed.
        guard self.requestEnded, self.requestBodyBytes == 0, self.idempotent else { return .fail }
        return .replay(reprove: self.provesPossession)
    }
}
