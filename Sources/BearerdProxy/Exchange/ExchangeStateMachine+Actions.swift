import BearerdAuth
import BearerdWire
import NIOCore

/// The states of ``ExchangeStateMachine`` and the actions its transitions return.
extension ExchangeStateMachine {
    enum Phase {
        /// Waiting for the token provider, at most `proxy.token_wait`.
        case waitingForToken
        /// The upstream head is written; waiting for a pooled or a new upstream connection.
        case connecting
        /// Attached to an upstream connection; parts flow both ways.
        case forwarding
        /// A 401 is held back from the client while the provider decides whether the request
        /// goes again (``HeldResponse``); its connection may already be back in the pool.
        case holding(HeldResponse, framing: ResponseFraming)
        /// Done; nothing more may happen to it.
        case finished
    }

    /// Why the client connection closes after this exchange (the first reason found is kept).
    enum CloseReason: Equatable {
        /// HTTP/1.0 without keep-alive, or `Connection: close`.
        case clientAsked
        /// A reload or a graceful shutdown came: the client comes back to the new settings.
        case retiring
        /// An upgrade request: nothing is parsed after it.
        case upgrade
        /// The answer came before the request was complete: its rest is not read.
        case requestUnfinished
        /// The response body ends with the connection (HTTP/1.0 clients).
        case responseUntilClose
        /// The request could not be parsed, or its body paused past `proxy.body_timeout`.
        case brokenRequest
        /// The upstream switched protocols unasked: it does not speak HTTP with bearerd.
        case brokenUpstream
    }

    /// Whether and how the request went again after a 401.
    enum AuthRetry: Equatable {
        case none
        /// Not sent again, but the provider heard of a 401 to it (a 401 held for a refresh, or
        /// passed on with a report): another 401, after a replay, is not reported again.
        case reported
        /// With the same token and the upstream's new DPoP nonce.
        case forNonce
        /// With a token fresh from the refresh the 401 asked for; `answerReported`: the provider
        /// heard whether the upstream took it.
        case withFreshToken(answerReported: Bool)
    }

    /// What the handler does with a part of the request the client sent.
    enum PartAction {
        /// Send it upstream now.
        case forwardBody(ByteBuffer)
        /// The request is complete: send its end upstream (a last chunk) and time the response.
        case forwardEnd
        /// Not attached yet: the machine holds it until ``attached(expectsContinue:)``.
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

    /// A response head going to the client.
    /// (Without the head: the handler has it, and a copy would retain its buffers.)
    struct Forward {
        var framing: ResponseFraming
        /// The head says `Connection: close`: the client connection closes after it.
        var close: Bool
        /// Tell the provider the upstream refused this token (a 401 that is not retried).
        var reportRejection: BearerToken?
        /// Tell the provider whether the token fresh from a forced refresh was taken.
        var freshTokenAnswer: (token: BearerToken, refused: Bool)?
        /// Tell the provider the upstream asked for more than this token has (a 403 that is not
        /// retried), for `status` and the next login.
        var reportChallenge: (challenge: ScopeChallenge, token: BearerToken)?
        /// When the response's progress is first checked.
        var progressCheck: NIODeadline
    }

    /// What the handler does with a response head from the upstream.
    enum HeadAction {
        /// Pass it on.
        case forward(Forward)
        /// Held (a 401): ask the provider for a token other than this one.
        case askProvider(refused: BearerToken)
        /// Held (a 401 asking for a DPoP nonce): nothing to ask; the retry follows its end.
        case hold
    }

    /// What the handler does when bearerd fails the request.
    enum FailAction: Equatable {
        /// Answer with bearerd's own error; `close`: the connection closes after it.
        case answer(close: Bool)
        /// A response began: close both connections.
        case abandon
    }

    /// What the handler does when a held 401 moves on.
    enum HeldAction {
        /// Keep holding.
        case wait
        /// Send the whole request again with this token (the kept body is held for the next
        /// connection); `fresh`: the token comes from a refresh, not a new DPoP nonce.
        case retry(BearerToken, fresh: Bool)
        /// Pass the 401 on as it came: the head, then the body pieces, then, if `ended`, the end.
        case release(Forward, head: ResponseHead, body: [ByteBuffer], ended: Bool)
    }

    /// What the machine needs of the request head.
    struct RequestFacts {
        /// The client asked for the connection to close after this exchange.
        var closes: Bool
        /// A body follows the head.
        var hasBody: Bool
        /// An upgrade request (nothing is parsed after it).
        var isUpgrade: Bool
    }
}
