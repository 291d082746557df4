import BearerdAuth
import BearerdWire
import NIOCore

/// One exchange, as a value: where the request is on its way upstream (waiting for a token, for
/// a connection, flowing), what came of the response (awaited, held as a 401, sent), whether the
/// request was sent again and why, and whether the connection closes after it. Each event
/// changes the state and returns what the handler does; nothing here touches a channel, a clock
/// or the token provider, so the tests drive whole exchanges alone
/// (`ExchangeStateMachineTests`).
///
/// Request parts that come before a connection is attached are held here (at most one read's
/// worth: client reads stop until then). The rules of single decisions stay values of their own:
/// ``UpstreamAnswer`` (forward or hold a response head), ``HeldResponse`` (retry or release a
/// held 401), ``UpstreamFailure`` (replay, fail or abandon).
struct ExchangeStateMachine {
    private(set) var phase: Phase = .connecting
    /// The client's request came in whole.
    private(set) var requestEnded = false
    /// Request body bytes received so far (a resend does not count them again).
    private(set) var requestBodyBytes = 0
    private var held: [RequestParser.Part] = []
    /// Something of the request went upstream once (it is being sent again after a 401 or on a
    /// fresh connection): a reload does not take it over.
    private(set) var wentUpstream = false
    /// The response head that went to the client, its status and framing; `nil` until then.
    private(set) var response: (status: Int, framing: ResponseFraming)?
    private(set) var responseBodyBytes = 0
    /// The upstream said its connection may carry another request.
    private(set) var upstreamKeepAlive = true
    /// Sent once more on a fresh connection after a pooled one turned out closed.
    private(set) var replayed = false
    private(set) var authRetry = AuthRetry.none
    /// The held answer was a 403 asking for more scope, not a 401.
    private(set) var heldForScope = false
    private(set) var closeReason: CloseReason?
    /// What the machine needs of the request head.
    let request: RequestFacts
    /// The body's, the response head's and the response's deadlines.
    private(set) var deadlines: ExchangeDeadlines

    init(_ request: RequestFacts, timeouts: ExchangeDeadlines.Timeouts) {
        self.request = request
        self.deadlines = ExchangeDeadlines(timeouts: timeouts)
        if request.closes { self.closeReason = .clientAsked }
    }

    /// Whether the exchange still holds its connection: a late event of an exchange that is
    /// over (a token, a connection, a timer) is dropped.
    var isLive: Bool {
        if case .finished = self.phase { return false }
        return true
    }

    /// Nothing of the request went upstream yet: it waits for its first token or connection.
    var isUnsent: Bool {
        guard !self.wentUpstream else { return false }
        switch self.phase {
        case .waitingForToken, .connecting: return true
        case .forwarding, .holding, .finished: return false
        }
    }

    var isForwarding: Bool {
        if case .forwarding = self.phase { return true }
        return false
    }

    /// The 401 held back, if one is.
    var heldResponse: HeldResponse? {
        if case .holding(let held, _) = self.phase { return held }
        return nil
    }

    /// A response head went to the client (the upstream's or bearerd's own).
    var responseStarted: Bool { self.response != nil }

    /// The client connection closes after this exchange.
    var closesConnection: Bool { self.closeReason != nil }

    /// The connection closes after this exchange, for `reason` (the first one is kept).
    mutating func closeAfter(_ reason: CloseReason) {
        if self.closeReason == nil { self.closeReason = reason }
    }

    // MARK: The request

    /// A piece of the request body came; `maxBody`: `proxy.max_request_body`, if set.
    mutating func bodyArrived(_ buffer: ByteBuffer, maxBody: Int?) -> PartAction {
        guard self.isLive else { return .drop }
        self.requestBodyBytes += buffer.readableBytes
        if let maxBody, self.requestBodyBytes > maxBody { return .refuseBody(limit: maxBody) }
        guard self.isForwarding else {
            self.held.append(.body(buffer))
            return .hold
        }
        return .forwardBody(buffer)
    }

    /// The request came in whole.
    mutating func endArrived() -> PartAction {
        guard self.isLive else { return .drop }
        self.requestEnded = true
        guard self.isForwarding else {
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
        if case .waitingForToken = self.phase { return true }
        return false
    }

    /// The upstream head is written (a token came, or none is needed): a connection is next.
    /// Returns whether the exchange is still live to take one.
    mutating func connecting() -> Bool {
        guard self.isLive else { return false }
        self.phase = .connecting
        return true
    }

    /// A reload came before anything of the request went upstream (it waits for a token or a
    /// connection): it ends here, and the parts held so far are returned, in order, to be
    /// started again under the new settings. `nil` once something went upstream, or it is over.
    mutating func takeUnsent() -> [RequestParser.Part]? {
        guard self.isUnsent else { return nil }
        let parts = self.held
        self.held = []
        self.phase = .finished
        return parts
    }

    /// An upstream connection is attached: the held parts go, in order, and parts flow from now.
    mutating func attached(expectsContinue: Bool) -> Attachment {
        self.phase = .forwarding
        self.wentUpstream = true
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
        self.requestEnded || (self.isForwarding && upstreamWritable())
    }

    // MARK: The response

    /// A response head came from the upstream; `answer`: the rule's facts but those this
    /// machine knows (whether a 401 was reported or retried already), `token`: the one the
    /// request carried, `framing`: how its body would go to the client.
    mutating func headArrived(
        _ head: ResponseHead,
        token: BearerToken?,
        bodyKept: Bool,
        asksForNewNonce: Bool,
        framing: ResponseFraming,
        challenge: ScopeChallenge? = nil,
        now: NIODeadline
    ) -> HeadAction {
        self.deadlines.stopWaitingForResponseHead()
        self.upstreamKeepAlive = head.keepAlive
        let answer = UpstreamAnswer(
            status: head.status,
            sentWithToken: token != nil,
            rejectionReported: self.authRetry.rejectionReported,
            mayRetry: !self.authRetry.retried && self.requestEnded && bodyKept,
            asksForNewNonce: asksForNewNonce,
            asksForMore: challenge != nil
        )
        switch (answer.action, token) {
        case (.holdForStepUp, let token?):
            self.phase = .holding(HeldResponse(head: head, sentWith: token, challenge: challenge), framing: framing)
            self.authRetry = .reported
            self.heldForScope = true
            return .askProvider(refused: token)
        case (.holdForNonce, let token?):
            self.phase = .holding(HeldResponse(head: head, nonceRetryWith: token), framing: framing)
            return .hold
        case (.holdForRefresh, let token?):
            self.phase = .holding(HeldResponse(head: head, sentWith: token), framing: framing)
            self.authRetry = .reported
            return .askProvider(refused: token)
        case (.forward(let report), _):
            var forward = self.forward(head, framing: framing, now: now)
            if report {
                forward.reportRejection = token
                if self.authRetry == .none { self.authRetry = .reported }
            }
            // A retry after a 403 that asked for more was reported with its hold: not again.
            if let challenge, let token, !self.heldForScope { forward.reportChallenge = (challenge, token) }
            if case .withFreshToken(answerReported: false) = self.authRetry, let token, !self.heldForScope {
                // Once per retry: whether the token fresh from the refresh a 401 forced was
                // taken, so a path that refuses every token stops forcing refreshes.
                self.authRetry = .withFreshToken(answerReported: true)
                forward.freshTokenAnswer = (token, head.status == 401 && !asksForNewNonce)
            }
            return .forward(forward)
        case (.holdForNonce, nil), (.holdForRefresh, nil), (.holdForStepUp, nil):
            return .forward(self.forward(head, framing: framing, now: now))
        }
    }

    /// The head goes to the client at `now`: the response has started (and must keep moving),
    /// and nothing goes again.
    private mutating func forward(_ head: ResponseHead, framing: ResponseFraming, now: NIODeadline) -> Forward {
        self.phase = .forwarding
        self.response = (head.status, framing)
        if !self.requestEnded { self.closeAfter(.requestUnfinished) }
        if framing == .close { self.closeAfter(.responseUntilClose) }
        return Forward(
            framing: framing,
            close: self.closesConnection,
            progressCheck: self.deadlines.responseStarted(now: now)
        )
    }

    /// A piece of response body goes to the client. Returns its framing (the response head's;
    /// `.none` before a head went).
    @discardableResult
    mutating func responseBodySent(_ bytes: Int) -> ResponseFraming {
        self.responseBodyBytes += bytes
        return self.response?.framing ?? .none
    }

    /// A piece of the held 401's body came; `keptBody`: the request body kept for a retry.
    mutating func heldBodyArrived(_ buffer: ByteBuffer, keptBody: ByteBuffer?, now: NIODeadline) -> HeldAction {
        guard case .holding(let held, let framing) = self.phase else { return .wait }
        return self.proceed(held.bodyArrived(buffer), with: held, framing: framing, keptBody: keptBody, now: now)
    }

    /// The held 401 is complete (its connection is back in the pool).
    mutating func heldEndArrived(keptBody: ByteBuffer?, now: NIODeadline) -> HeldAction {
        guard case .holding(let held, let framing) = self.phase else { return .wait }
        return self.proceed(held.endArrived(), with: held, framing: framing, keptBody: keptBody, now: now)
    }

    /// The provider answered the held 401: a token to retry with, or none.
    mutating func providerDecided(_ token: BearerToken?, keptBody: ByteBuffer?, now: NIODeadline) -> HeldAction {
        guard case .holding(let held, let framing) = self.phase else { return .wait }
        return self.proceed(held.decided(token), with: held, framing: framing, keptBody: keptBody, now: now)
    }

    /// The held 401's rule said what comes next: the machine takes the transition.
    private mutating func proceed(
        _ next: HeldResponse.Next,
        with held: HeldResponse,
        framing: ResponseFraming,
        keptBody: ByteBuffer?,
        now: NIODeadline
    ) -> HeldAction {
        switch next {
        case .wait:
            return .wait
        case .retry(let token):
            self.authRetry = held.forNonce ? .forNonce : .withFreshToken(answerReported: false)
            self.phase = .connecting
            self.held = (keptBody.map { [.body($0)] } ?? []) + [.end]
            return .retry(token, fresh: !held.forNonce)
        case .release:
            // Passed on as it came: the rule that held it ran already and is not asked again.
            var forward = self.forward(held.head, framing: framing, now: now)
            // A nonce 401 that is not retried (its body was too large to hold) is a refusal the
            // provider has not heard of, as any 401 passed on unretried.
            if held.forNonce && !self.authRetry.rejectionReported {
                forward.reportRejection = held.sentWith
                if self.authRetry == .none { self.authRetry = .reported }
            }
            return .release(
                forward,
                head: held.head,
                body: [held.body, held.overflow].compactMap { $0 },
                ended: held.ended
            )
        }
    }

    // MARK: Deadlines

    /// A read ended at `now` while the request body is still to come. Returns the first body
    /// check, once.
    mutating func readEnded(now: NIODeadline) -> NIODeadline? {
        guard self.isLive, !self.requestEnded, !self.deadlines.watchesBody else { return nil }
        return self.deadlines.bodyArriving(now: now)
    }

    /// bearerd held client reads back (the upstream could not take more): not the client's
    /// fault if its body pauses.
    mutating func readsWereHeld() {
        self.deadlines.readsWereHeld()
    }

    /// The whole request went upstream at `sent`. Returns the response head's deadline, unless
    /// one runs already or the response began.
    mutating func requestSent(at sent: @autoclosure () -> NIODeadline) -> NIODeadline? {
        guard self.deadlines.responseHeadDue == nil, !self.responseStarted else { return nil }
        return self.deadlines.requestSent(at: sent())
    }

    /// The connection's timer fired at `now`: what has expired, else when to look again.
    /// `readsHeld`: bearerd holds client reads back now; `clientWritable`: the client can take
    /// more.
    mutating func timerFired(now: NIODeadline, readsHeld: Bool, clientWritable: Bool) -> ExchangeDeadlines.Check {
        guard self.isLive else { return .none }
        let snapshot = ExchangeDeadlines.Snapshot(
            requestBodyBytes: self.requestBodyBytes,
            requestEnded: self.requestEnded,
            readsHeld: readsHeld,
            responseBodyBytes: self.responseBodyBytes,
            clientWritable: clientWritable
        )
        return self.deadlines.check(now: now, snapshot)
    }

    // MARK: Endings

    /// The upstream connection failed or closed before the response ended; the handler gathered
    /// the facts of the connection. Returns what the rule says (``UpstreamFailure``).
    mutating func upstreamFailed(
        connectionReused: Bool,
        idempotent: Bool,
        malformedResponse: Bool,
        unaskedSwitch: Bool,
        provesPossession: Bool
    ) -> UpstreamFailure.Action? {
        // Only an exchange attached to the connection hears of it (a held 401's included).
        guard self.isForwarding || self.heldResponse != nil else { return nil }
        if unaskedSwitch { self.closeAfter(.brokenUpstream) }
        // A replay sends the request again, and waits again.
        self.deadlines.stopWaitingForResponseHead()
        if case .holding = self.phase { self.phase = .forwarding }
        let action = UpstreamFailure(
            responseStarted: self.responseStarted,
            connectionReused: connectionReused,
            replayed: self.replayed,
            requestEnded: self.requestEnded,
            requestBodyBytes: self.requestBodyBytes,
            idempotent: idempotent,
            malformedResponse: malformedResponse,
            provesPossession: provesPossession
        ).action
        if case .replay = action {
            self.replayed = true
            self.phase = .connecting
            self.held = [.end]
        }
        return action
    }

    /// bearerd fails the request with `status`: an answer of its own, when no response head went
    /// to the client yet, which says whether the connection closes after it (a body still unread
    /// is not read to its end); otherwise the exchange is abandoned (nothing more can be said on
    /// a connection whose response began).
    mutating func failed(status: Int) -> FailAction {
        guard !self.responseStarted else {
            self.finished()
            return .abandon
        }
        self.phase = .finished
        self.held = []
        if !self.requestEnded && self.request.hasBody { self.closeAfter(.requestUnfinished) }
        // Nothing is parsed after an upgrade request: nothing else can come on this connection.
        if self.request.isUpgrade { self.closeAfter(.upgrade) }
        self.response = (status, .length)
        return .answer(close: self.closesConnection)
    }

    /// The upstream switched protocols as asked: the 101 goes to the client and the connections
    /// are spliced; nothing more of HTTP happens here.
    mutating func switched() {
        self.deadlines.stopWaitingForResponseHead()
        self.phase = .finished
        self.held = []
        self.response = (101, .none)
    }

    /// The upstream's response ended. Returns whether its connection may carry another request
    /// (the whole request went, and the upstream did not say close).
    mutating func responseEnded() -> (reusable: Bool, chunked: Bool) {
        self.finished()
        return (self.requestEnded && self.upstreamKeepAlive, self.response?.framing == .chunked)
    }

    /// The exchange is over (the response ended, or it was abandoned).
    mutating func finished() {
        self.phase = .finished
        self.held = []
    }
}

extension ExchangeStateMachine.AuthRetry {
    /// The provider heard of a 401 to this exchange already.
    var rejectionReported: Bool {
        switch self {
        case .reported, .withFreshToken: true
        case .none, .forNonce: false
        }
    }

    /// The request went again after a 401 (at most once).
    var retried: Bool {
        switch self {
        case .forNonce, .withFreshToken: true
        case .none, .reported: false
        }
    }
}
