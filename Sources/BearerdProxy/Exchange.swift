import BearerdAuth
import BearerdConfig
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// One request/response pair passing through a client connection.
final class Exchange {
    let request: RequestHead
    /// The request target as checked and forwarded (set once the request passed the checks).
    var target: ForwardTarget?
    let startedAt: NIODeadline
    /// Where the request is on its way upstream, and the parts held until it is attached.
    var course = ExchangeCourse()
    var requestEnded: Bool { self.course.requestEnded }
    var requestBodyBytes: Int { self.course.requestBodyBytes }
    var responseBodyBytes = 0
    /// The request head for the upstream, serialised (kept for a replay on a fresh connection).
    var upstreamHead: ByteBuffer?
    var requestFraming = RequestFraming.none
    var responseFraming = ResponseFraming.none
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
    var responseStatus: HTTPResponseStatus?
    var responseHeadSent = false
    var upstreamKeepAlive = true
    /// Close the client connection once this exchange ends.
    var closeClientAfter: Bool
    /// The body's, the response head's and the response's deadlines (``ExchangeDeadlines``).
    var deadlines: ExchangeDeadlines
    /// Replayed once on a fresh connection after a pooled one turned out closed.
    var retried = false
    /// The request body so far, in one buffer, kept for a retry after a 401 while it fits
    /// `proxy.retry_body_limit` and the shared ``ProxySettings/retryBufferTotal``; `nil` when no
    /// retry is possible (a method never retried, a body too large, the total reached).
    var retryBody: ByteBuffer?
    /// Whether the whole body so far is kept (a bodyless request needs no buffer at all).
    var retryPossible = false
    /// The bytes of capacity `retryBody` holds of `retryBudget`, given back when it goes.
    var retryReserved = 0
    var retryBudget: SharedBudget?
    /// A 401 held back while the token provider decides whether this request is retried.
    var held: HeldResponse?
    /// The token provider heard of this exchange's 401 (at most once per exchange).
    var rejectionReported = false
    /// Sent again with a new token after a 401 (at most once).
    var authRetried = false
    /// That retry carries a token fresh from the refresh the 401 asked for (not the same token
    /// with a DPoP nonce): its answer tells the provider whether fresh tokens help this path.
    var retriedWithFreshToken = false
    /// Its span, when `tracing.endpoint` is set.
    var trace: ExchangeTrace?

    /// Appends a piece of the request body to the retry buffer, or drops the buffer when the
    /// body no longer fits.
    func keepForRetry(_ piece: ByteBuffer, limit: Int) {
        guard self.retryPossible else { return }
        var kept = self.retryBody ?? ByteBufferAllocator().buffer(capacity: piece.readableBytes)
        self.retryBody = nil  // one owner while it grows, so the write does not copy it
        guard kept.readableBytes + piece.readableBytes <= limit else { return self.dropRetryBody() }
        kept.writeImmutableBuffer(piece)
        let growth = kept.capacity - self.retryReserved
        if growth > 0 {
            guard self.retryBudget?.take(growth) ?? false else { return self.dropRetryBody() }
            self.retryReserved += growth
        }
        self.retryBody = kept
    }

    /// The body is not needed for a retry any more (or cannot be kept): its bytes go back.
    func dropRetryBody() {
        self.retryPossible = false
        self.retryBody = nil
        self.retryBudget?.give(self.retryReserved)
        self.retryReserved = 0
    }

    deinit {
        self.retryBudget?.give(self.retryReserved)
    }

    init(request: consuming RequestHead, startedAt: NIODeadline, timeouts: ExchangeDeadlines.Timeouts) {
        self.closeClientAfter = !request.keepAlive
        self.request = request
        self.startedAt = startedAt
        self.deadlines = ExchangeDeadlines(timeouts: timeouts)
    }

    /// Whether the client said a body follows the head.
    var requestHasBody: Bool { self.request.hasBody }

    /// Stops waiting for the upstream and closes its connection (it cannot carry another request
    /// after an exchange broke off). Returns the connection, closed, if there was one.
    @discardableResult
    func closeUpstream() -> UpstreamConnection? {
        self.deadlines.stopWaitingForResponseHead()
        let connection = self.upstream
        self.upstream = nil
        connection?.close()
        return connection
    }

    var expectsContinue: Bool {
        self.request.version.minor >= 1 && self.request.contains("expect")
    }
}
