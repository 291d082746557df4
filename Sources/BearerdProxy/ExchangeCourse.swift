import BearerdWire
import NIOCore

/// The way of one request to the upstream, as a value: it waits for a token, then for a
/// connection, then flows until its response ends. Request parts that come before the
/// connection is attached are held here (at most one read's worth: client reads stop until
/// then). Each event changes the course and returns what the handler does; nothing here touches
/// a channel, a clock or the token provider, so the tests drive it alone
/// (`ExchangeCourseTests`).
///
/// The course of the response is decided by values of its own: ``UpstreamAnswer`` (forward,
/// hold for a refresh or a DPoP nonce), ``HeldResponse`` (retry or release a held 401) and
/// ``UpstreamFailure`` (replay, fail or abandon).
struct ExchangeCourse {
    enum Phase: Equatable {
        /// Waiting for the token provider, at most `proxy.token_wait`.
        case waitingForToken
        /// The upstream head is written; waiting for a pooled or a new upstream connection.
        case connecting
        /// Attached to an upstream connection; parts flow both ways.
        case forwarding
        /// Done; nothing more may happen to it.
        case finished
    }

    /// What the handler does with a part of the request the client sent.
    enum PartAction {
        /// Send it upstream now.
        case forwardBody(ByteBuffer)
        /// The request is complete: send its end upstream (a last chunk) and time the response.
        case forwardEnd
        /// Not attached yet: the course holds it until ``attached(expectsContinue:)``.
        case hold
        /// The body went over `proxy.max_request_body`: answer 413.
        case refuseBody(limit: Int)
        /// The exchange is over: the part is dropped.
        case drop
    }

    /// What the handler sends when the upstream connection is attached.
    struct Attachment {
        /// The client asked for `100 Continue` and has sent none of its body yet.
        var sendContinue: Bool
        /// The parts held until now, in order.
        var parts: [RequestParser.Part]
        /// The whole request is upstream once they are written: time the response.
        var requestComplete: Bool
    }

    private(set) var phase: Phase = .connecting
    /// The client's request came in whole.
    private(set) var requestEnded = false
    /// Request body bytes received so far (a resend does not count them again).
    private(set) var requestBodyBytes = 0
    private var held: [RequestParser.Part] = []

    /// Whether the exchange still holds its connection: a late event of an exchange that is
    /// over (a token, a connection, a timer) is dropped.
    var isLive: Bool { self.phase != .finished }

    var isForwarding: Bool { self.phase == .forwarding }

    /// A piece of the request body came; `maxBody`: `proxy.max_request_body`, if set.
    mutating func bodyArrived(_ buffer: ByteBuffer, maxBody: Int?) -> PartAction {
        guard self.isLive else { return .drop }
        self.requestBodyBytes += buffer.readableBytes
        if let maxBody, self.requestBodyBytes > maxBody { return .refuseBody(limit: maxBody) }
        guard self.phase == .forwarding else {
            self.held.append(.body(buffer))
            return .hold
        }
        return .forwardBody(buffer)
    }

    /// The request came in whole.
    mutating func endArrived() -> PartAction {
        guard self.isLive else { return .drop }
        self.requestEnded = true
        guard self.phase == .forwarding else {
            self.held.append(.end)
            return .hold
        }
        return .forwardEnd
    }

    /// No token is at hand: the provider is asked, for at most `proxy.token_wait`.
    mutating func waitForToken() {
        guard self.isLive else { return }
        self.phase = .waitingForToken
    }

    /// `proxy.token_wait` passed. Returns whether the exchange still waits, and so gets its 503.
    func tokenWaitExpired() -> Bool {
        self.phase == .waitingForToken
    }

    /// The upstream head is written (a token came, or none is needed): a connection is next.
    /// Returns whether the exchange is still live to take one.
    mutating func connecting() -> Bool {
        guard self.isLive else { return false }
        self.phase = .connecting
        return true
    }

    /// The whole request goes again on another connection: after a 401 with a new token (its
    /// kept `body`), or after a pooled connection turned out closed (a bodyless request).
    mutating func resend(body: ByteBuffer?) {
        guard self.isLive else { return }
        self.phase = .connecting
        self.held = (body.map { [.body($0)] } ?? []) + [.end]
    }

    /// An upstream connection is attached: the held parts go, in order, and parts flow from now.
    mutating func attached(expectsContinue: Bool) -> Attachment {
        self.phase = .forwarding
        let parts = self.held
        self.held = []
        return Attachment(
            sendContinue: expectsContinue && !self.requestEnded && self.requestBodyBytes == 0,
            parts: parts,
            requestComplete: self.requestEnded
        )
    }

    /// Whether the client's next read may come now. While the request is still arriving, only
    /// a connection that is attached and can take more: otherwise reads wait (backpressure).
    func clientMayRead(upstreamWritable: @autoclosure () -> Bool) -> Bool {
        self.requestEnded || (self.phase == .forwarding && upstreamWritable())
    }

    /// The exchange is over (answered, abandoned, or handed to a splice).
    mutating func finished() {
        self.phase = .finished
        self.held = []
    }
}
