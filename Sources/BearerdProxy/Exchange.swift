import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOHTTP1

/// One request/response pair passing through a client connection.
final class Exchange {
    enum Phase {
        /// Waiting for a token or an upstream connection; request parts are buffered.
        case preparing
        /// Attached to an upstream connection; parts flow both ways.
        case forwarding
        /// Done; nothing more may happen to it.
        case finished
    }

    let request: HTTPRequestHead
    /// The request target as checked and forwarded (set once the request passed the checks).
    var target: CanonicalTarget?
    let startedAt: NIODeadline
    var phase: Phase = .preparing
    /// Request parts received before the upstream connection was attached (at most one read's worth,
    /// because reads stop while preparing).
    var buffered: [HTTPServerRequestPart] = []
    var requestEnded = false
    var requestBodyBytes = 0
    var responseBodyBytes = 0
    /// The request head for the upstream, serialised (kept for a replay on a fresh connection).
    var upstreamHead: ByteBuffer?
    var requestFraming = RequestFraming.none
    var responseFraming = ResponseFraming.none
    var token: BearerToken?
    var upstream: UpstreamConnection?
    var upstreamStartedAt: NIODeadline?
    /// Went upstream as its head arrived, without waiting for a token or a connection.
    var attachedAtStart = false
    var responseStatus: HTTPResponseStatus?
    var responseHeadSent = false
    var upstreamKeepAlive = true
    /// Close the client connection once this exchange ends.
    var closeClientAfter: Bool
    /// When the response head must have arrived; set when the request has been sent.
    var responseDeadline: NIODeadline?
    /// When the request body is next checked for progress (`proxy.body_timeout`), and what it
    /// had then; `readsHeld`: bearerd held client reads back since the last check.
    var bodyCheckAt: NIODeadline?
    var bodyBytesAtCheck = 0
    var readsHeld = false
    /// After the response head went out: when the response is next checked for progress, the
    /// body bytes it had then, and since when it has made none (`proxy.send_timeout`,
    /// `upstream.read_timeout`).
    var progressCheckAt: NIODeadline?
    var progressBytes = 0
    var stalledSince: NIODeadline?
    /// Replayed once on a fresh connection after a pooled one turned out closed.
    var retried = false
    /// The request body so far, kept while it fits `proxy.retry_body_limit`; `nil` once it does not.
    var retryBody: [ByteBuffer]? = []
    /// A 401 held back while the token provider decides whether this request is retried.
    var held: HeldResponse?
    /// The token provider heard of this exchange's 401 (at most once per exchange).
    var rejectionReported = false
    /// Sent again with a new token after a 401 (at most once).
    var authRetried = false

    init(request: HTTPRequestHead, startedAt: NIODeadline) {
        self.request = request
        self.startedAt = startedAt
        self.closeClientAfter = !request.isKeepAlive
    }

    /// Whether the client said a body follows the head.
    var requestHasBody: Bool {
        let headers = self.request.headers
        if headers.contains(name: "transfer-encoding") { return true }
        if let length = headers.first(name: "content-length") { return length != "0" }
        return false
    }

    /// Stops waiting for the upstream and closes its connection (it cannot carry another request
    /// after an exchange broke off). Returns the connection, closed, if there was one.
    @discardableResult
    func closeUpstream() -> UpstreamConnection? {
        self.responseDeadline = nil
        let connection = self.upstream
        self.upstream = nil
        connection?.close()
        return connection
    }

    var expectsContinue: Bool {
        self.request.version.minor >= 1 && self.request.headers.contains(name: "expect")
    }
}
