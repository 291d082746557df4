import Testing

@testable import BearerdProxy

/// The rule for a response head, on its own: a 401 to a token bearerd added is held for one
/// more try when the request can go again; the provider hears of every other such 401 once.
@Suite("An upstream's answer")
struct UpstreamAnswerTests {
    /// A 401 to a bodyless GET bearerd sent with its token, heard of for the first time.
    static let refused = UpstreamAnswer(
        status: 401,
        sentWithToken: true,
        rejectionReported: false,
        mayRetry: true,
        asksForNewNonce: false
    )

    @Test func anythingButA401ToOurTokenGoesToTheClient() {
        for status in [200, 204, 302, 403, 404, 500, 503] {
            var answer = Self.refused
            answer.status = status
            #expect(answer.action == .forward(reportRejection: false), "\(status)")
        }
        var theirs = Self.refused
        theirs.sentWithToken = false
        #expect(theirs.action == .forward(reportRejection: false), "a client's own Authorization is its business")
    }

    @Test func a401ThatCanGoAgainWaitsForANewToken() {
        #expect(Self.refused.action == .holdForRefresh)
    }

    @Test func a401ThatCannotGoAgainIsPassedOnAndReportedOnce() {
        var spent = Self.refused
        spent.mayRetry = false
        #expect(spent.action == .forward(reportRejection: true), "the provider refreshes before the next request")
        spent.rejectionReported = true
        #expect(spent.action == .forward(reportRejection: false), "once per exchange")
        var heard = Self.refused
        heard.rejectionReported = true
        #expect(heard.action == .forward(reportRejection: false), "no second retry after the provider was asked")
    }

    @Test func aNonceRequestGoesAgainWithTheSameTokenWhileARetryIsLeft() {
        var nonce = Self.refused
        nonce.asksForNewNonce = true
        #expect(nonce.action == .holdForNonce)
        nonce.rejectionReported = true
        #expect(nonce.action == .holdForNonce, "a nonce is not a refused token")
        nonce.mayRetry = false
        nonce.rejectionReported = false
        #expect(nonce.action == .forward(reportRejection: true), "the one retry is spent")
    }
}
