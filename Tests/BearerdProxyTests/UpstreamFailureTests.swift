import Testing

@testable import BearerdProxy

/// The rule for an upstream connection that fails before the response ended, on its own: a
/// request goes once more on a fresh connection only when that cannot do anything twice.
@Suite("An upstream connection failing")
struct UpstreamFailureTests {
    /// A bodyless GET sent whole on a pooled connection, nothing answered yet: the case of a
    /// keep-alive connection the upstream closed while it sat idle.
    static let stalePooledGET = UpstreamFailure(
        responseStarted: false,
        connectionReused: true,
        replayed: false,
        requestEnded: true,
        requestBodyBytes: 0,
        idempotent: true,
        malformedResponse: false,
        provesPossession: false
    )

    @Test func aBodylessIdempotentRequestOnAPooledConnectionGoesOnceMore() {
        #expect(Self.stalePooledGET.action == .replay(reprove: false))
        var dpop = Self.stalePooledGET
        dpop.provesPossession = true
        #expect(dpop.action == .replay(reprove: true), "a DPoP proof is for one sending")
    }

    @Test func onlyOnce() {
        var again = Self.stalePooledGET
        again.replayed = true
        #expect(again.action == .fail)
    }

    @Test func nothingThatCouldHappenTwiceIsSentAgain() {
        var post = Self.stalePooledGET
        post.idempotent = false
        #expect(post.action == .fail, "the upstream may have acted on a POST before it closed")
        var body = Self.stalePooledGET
        body.requestBodyBytes = 1
        #expect(body.action == .fail, "the body is not kept for this")
        var unfinished = Self.stalePooledGET
        unfinished.requestEnded = false
        #expect(unfinished.action == .fail)
    }

    @Test func aNewConnectionOrABrokenUpstreamIsNotAStalePooledOne() {
        var fresh = Self.stalePooledGET
        fresh.connectionReused = false
        #expect(fresh.action == .fail, "a connection made for this request did not go stale")
        var malformed = Self.stalePooledGET
        malformed.malformedResponse = true
        #expect(malformed.action == .fail, "asking a broken upstream again gets the same answer")
    }

    @Test func aResponseHalfSentEndsTheClientConnectionWhateverElseHolds() {
        var started = Self.stalePooledGET
        started.responseStarted = true
        #expect(started.action == .abandon)
        started.idempotent = false
        started.connectionReused = false
        #expect(started.action == .abandon)
    }
}
