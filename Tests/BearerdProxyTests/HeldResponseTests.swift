import BearerdAuth
import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// The rule for a held 401, on its own: retried once it is complete and the provider answered
/// with a token other than the refused one (or the same one for a DPoP nonce); otherwise passed
/// on to the client.
@Suite("A held 401")
struct HeldResponseTests {
    static let refused = BearerToken("refused-token")
    static let fresh = BearerToken("fresh-token")

    static func head() throws -> ResponseHead {
        try ResponseHead.parse(ByteBuffer(string: "HTTP/1.1 401 Unauthorized\r\ncontent-length: 2\r\n\r\n"))
    }

    @Test func itWaitsForBothItsEndAndTheProvidersAnswerInEitherOrder() throws {
        let endFirst = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        #expect(endFirst.bodyArrived(ByteBuffer(string: "no")) == .wait)
        #expect(endFirst.endArrived() == .wait, "the provider has not answered")
        #expect(endFirst.decided(Self.fresh) == .retry(Self.fresh))

        let answerFirst = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        #expect(answerFirst.decided(Self.fresh) == .wait, "the 401 is not complete")
        #expect(answerFirst.endArrived() == .retry(Self.fresh))
    }

    @Test func itIsPassedOnWhenTheProviderHasNoOtherToken() throws {
        let same = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        _ = same.endArrived()
        #expect(same.decided(Self.refused) == .release, "the same token would be refused again")

        let none = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        _ = none.endArrived()
        #expect(none.decided(nil) == .release)
    }

    @Test func aNonceRetryGoesWithTheSameToken() throws {
        let held = HeldResponse(head: try Self.head(), nonceRetryWith: Self.refused)
        #expect(held.forNonce)
        #expect(held.endArrived() == .retry(Self.refused))
    }

    @Test func aBodyTooLargeToHoldIsPassedOnAtOnce() throws {
        let held = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        let piece = ByteBuffer(repeating: UInt8(ascii: "x"), count: HeldResponse.maxBody)
        #expect(held.bodyArrived(piece) == .wait, "exactly the limit is held")
        #expect(held.bodyArrived(ByteBuffer(string: "x")) == .release)
        #expect(held.bodyBytes == HeldResponse.maxBody)
        #expect(held.overflow?.readableBytes == 1)
    }

    /// Small chunks joined (issue 35, ``BodyFramer``): a held 401 does not keep a slice, and
    /// with it a read buffer, per chunk.
    @Test func aHeld401KeepsItsPiecesInOneBufferOfItsOwn() throws {
        let held = HeldResponse(head: try Self.head(), sentWith: Self.refused)
        var read = ByteBuffer(repeating: UInt8(ascii: "y"), count: 60_000)
        // Sixty thousand one-byte slices of one read, as the upstream could send them.
        while let piece = read.readSlice(length: 1) { _ = held.bodyArrived(piece) }
        #expect(held.bodyBytes == 60_000)
        // One buffer, at most twice what it holds (the slices would hold the whole read each).
        let body = try #require(held.body)
        #expect(body.readableBytes == 60_000)
        #expect(body.capacity <= 2 * 60_000)
    }
}
