import BearerdAuth
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// What one request/response pair passing through a client connection holds while it runs:
/// the request head, the upstream connection, the kept body, the span. Its state is a value,
/// ``ExchangeStateMachine``, which the connection's machine holds beside this reference
/// (``ProxyHandler/StateMachine``): the handler changes it only through that machine.
final class Exchange {
    let request: RequestHead
    /// The request target as checked and forwarded (set once the request passed the checks).
    var target: ForwardTarget?
    let startedAt: NIODeadline
    /// The request head for the upstream, serialised (kept for a replay on a fresh connection).
    var upstreamHead: ByteBuffer?
    var requestFraming = RequestFraming.none
    /// The token the request went with (`nil`: `proxy.client_authorization: keep`).
    var token: BearerToken?
    /// The upstream's `DPoP-Nonce` the proof of this request carried (`auth.dpop`).
    var dpopNonce: String?
    /// What the request offered the upstream to switch to (`proxy.allow_upgrades`), which a 101
    /// must take up to be spliced.
    var upgrade: UpgradeOffer?
    var upstream: UpstreamConnection?
    var upstreamStartedAt: NIODeadline?
    /// Went upstream as its head arrived, without waiting for a token or a connection.
    var attachedAtStart = false
    /// The request body kept for a retry after a 401, when one can happen.
    var retryBody = RetryBody()
    /// Its span, when `tracing.endpoint` is set.
    var trace: ExchangeTrace?

    deinit {
        self.retryBody.drop()
    }

    init(request: consuming RequestHead, startedAt: NIODeadline) {
        self.request = request
        self.startedAt = startedAt
    }

    /// Closes the upstream connection (it cannot carry another request after an exchange broke
    /// off), if there is one.
    func closeUpstream() {
        let connection = self.upstream
        self.upstream = nil
        connection?.close()
    }

    var expectsContinue: Bool {
        self.request.version.minor >= 1 && self.request.contains("expect")
    }
}

extension ExchangeStateMachine.RequestFacts {
    /// What the exchange's machine needs of `head`.
    init(_ head: borrowing RequestHead) {
        self.init(closes: !head.keepAlive, hasBody: head.hasBody, isUpgrade: head.isUpgrade)
    }
}
