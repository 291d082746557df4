import BearerdAuth
import BearerdWire
import NIOCore

/// A 401 (or a 403 asking for more scope) held back from the client while the token provider
/// decides whether the request is sent again with a new token. Its events return what happens next, so the rule (retry only
/// with a token other than the one the upstream refused, or with the same one for a new DPoP
/// nonce, and only once the 401 is complete) lives here, apart from the channel. A class: the
/// data path asks "is one held?" for every response part, and that must be a pointer check,
/// not a copy of a head.
final class HeldResponse {
    /// A held 401 body larger than this goes to the client as it is, without a retry.
    static let maxBody = 64 * 1024

    /// What happens to the held 401 next.
    enum Next: Equatable {
        /// Keep holding: the 401 is not complete, or the provider has not answered.
        case wait
        /// Send the request again with this token.
        case retry(BearerToken)
        /// Give the 401 to the client as it is.
        case release
    }

    let head: ResponseHead
    /// The token the refused request carried.
    let sentWith: BearerToken
    /// The body so far, copied into one buffer: pieces from the upstream are slices of its read
    /// buffers, and holding thousands of small ones would hold thousands of reads.
    private(set) var body: ByteBuffer?
    var bodyBytes: Int { self.body?.readableBytes ?? 0 }
    private(set) var ended = false
    /// `nil` until the provider answers; then the token to retry with, or `.some(nil)`: no retry.
    private var decision: BearerToken??
    /// The upstream asked for a DPoP nonce: the retry goes with the same token.
    let forNonce: Bool
    /// A 403 that asks for more (RFC 6750 §3.1, RFC 9470): what it asks for.
    let challenge: ScopeChallenge?

    /// A 401 to a request sent with `sentWith` (or a 403 with `challenge`), held while the
    /// provider decides.
    init(head: ResponseHead, sentWith: BearerToken, challenge: ScopeChallenge? = nil) {
        self.head = head
        self.sentWith = sentWith
        self.forNonce = false
        self.challenge = challenge
    }

    /// A 401 asking for the DPoP nonce it carried: retried with the same token, no refresh.
    init(head: ResponseHead, nonceRetryWith token: BearerToken) {
        self.head = head
        self.sentWith = token
        self.decision = .some(token)
        self.forNonce = true
        self.challenge = nil
    }

    /// A piece of the 401's body came; too large a body is not held.
    func bodyArrived(_ buffer: ByteBuffer) -> Next {
        guard self.bodyBytes + buffer.readableBytes <= Self.maxBody else {
            // Too large to hold: what came so far and this piece go to the client as they are.
            self.overflow = buffer
            return .release
        }
        var kept = self.body ?? ByteBufferAllocator().buffer(capacity: buffer.readableBytes)
        self.body = nil  // one owner while it grows, so the write does not copy it
        kept.writeImmutableBuffer(buffer)
        self.body = kept
        return .wait
    }

    /// The piece that made the body too large to hold, released after ``body``.
    private(set) var overflow: ByteBuffer?

    /// The 401 is complete.
    func endArrived() -> Next {
        self.ended = true
        return self.next
    }

    /// The provider answered: a token to retry with, or none.
    func decided(_ token: BearerToken?) -> Next {
        self.decision = .some(token)
        return self.next
    }

    private var next: Next {
        guard self.ended, let decision = self.decision else { return .wait }
        guard let token = decision, token != self.sentWith || self.forNonce else { return .release }
        return .retry(token)
    }
}
