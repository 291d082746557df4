/// What bearerd does with a response head from the upstream before any of it reaches the
/// client: pass it on, or hold a 401 (or a 403 asking for more scope) for one more try. A value and a rule, apart from the
/// channel: the handler gathers the facts, asks ``action`` and carries it out
/// (`ProxyHandler.upstreamReceived`); ``HeldResponse`` then decides when a held 401 is retried
/// or released.
struct UpstreamAnswer: Equatable {
    enum Action: Equatable {
        /// Give the head to the client. `reportRejection`: first tell the token provider that the
        /// upstream refused this token (a 401 that will not be retried), so that it refreshes
        /// before the next request instead of at the token's expiry.
        case forward(reportRejection: Bool)
        /// A 401 asking for the DPoP nonce it carries (RFC 9449 §9): send the request again with
        /// the same token and the new nonce; no refresh.
        case holdForNonce
        /// A 401 to a token bearerd added: ask the provider for a new token and try once more.
        case holdForRefresh
        /// A 403 asking for more than the token bearerd added has (RFC 6750 §3.1
        /// `insufficient_scope`, RFC 9470): ask the provider for a token that has it, and try
        /// once more with it if there is one.
        case holdForStepUp
    }

    /// The response's status code.
    var status: Int
    /// bearerd added a token to the request (not `proxy.client_authorization: keep`).
    var sentWithToken: Bool
    /// The provider already heard of a 401 to this exchange.
    var rejectionReported: Bool
    /// The request may go again: not retried yet, its body complete and kept.
    var mayRetry: Bool
    /// The 401 asks for a DPoP nonce (`use_dpop_nonce`) other than the one the request carried.
    var asksForNewNonce: Bool
    /// The 403 asks for more scope or a stronger login (``ScopeChallenge``).
    var asksForMore = false

    var action: Action {
        if self.status == 403, self.sentWithToken, self.asksForMore {
            return self.mayRetry && !self.rejectionReported ? .holdForStepUp : .forward(reportRejection: false)
        }
        guard self.status == 401, self.sentWithToken else { return .forward(reportRejection: false) }
        if self.asksForNewNonce && self.mayRetry { return .holdForNonce }
        if self.rejectionReported { return .forward(reportRejection: false) }
        return self.mayRetry ? .holdForRefresh : .forward(reportRejection: true)
    }
}
