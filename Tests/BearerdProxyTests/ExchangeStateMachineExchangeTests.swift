import BearerdAuth
import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// Whole exchanges through ``ExchangeStateMachine``, without a channel or a clock: a 401 retried
/// with a fresh token or a DPoP nonce, a 401 passed on, a replay after a pooled connection turned
/// out closed, an upgrade, an answer before the request ended, and who decides the close.
@Suite("Whole exchanges through the exchange's machine")
struct ExchangeStateMachineExchangeTests {
    static let timeouts = ExchangeDeadlinesTests.deadlines().timeouts
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static let refused = BearerToken("refused-token")
    static let fresh = BearerToken("fresh-token")

    static func head(_ status: Int, _ fields: String = "content-length: 2\r\n") throws -> ResponseHead {
        try ResponseHead.parse(ByteBuffer(string: "HTTP/1.1 \(status) Status\r\n\(fields)\r\n"))
    }

    /// A POST with a body, attached, its body and end sent upstream.
    static func sent(_ body: String = "payload") -> ExchangeStateMachine {
        var machine = ExchangeStateMachine(
            .init(closes: false, hasBody: true, isUpgrade: false),
            timeouts: Self.timeouts
        )
        _ = machine.connecting()
        _ = machine.attached(expectsContinue: false)
        _ = machine.bodyArrived(ByteBuffer(string: body), maxBody: nil)
        _ = machine.endArrived()
        return machine
    }

    static func text(_ parts: [RequestParser.Part]) -> [String] {
        ExchangeStateMachineTests.text(parts)
    }

    @Test func a401IsHeldThenSentAgainWithTheFreshTokenAndItsAnswerReported() throws {
        var machine = Self.sent()
        guard
            case .askProvider(let asked) = machine.headArrived(
                try Self.head(401),
                token: Self.refused,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a 401 to a kept request was not held")
            return
        }
        #expect(asked == Self.refused)
        #expect(!machine.responseStarted && machine.heldResponse != nil && !machine.isForwarding)
        guard case .wait = machine.heldBodyArrived(ByteBuffer(string: "no"), keptBody: nil, now: Self.t0),
            case .wait = machine.heldEndArrived(keptBody: nil, now: Self.t0)
        else {
            Issue.record("the 401 moved on before the provider answered")
            return
        }
        guard
            case .retry(let token, fresh: true) = machine.providerDecided(
                Self.fresh,
                keptBody: ByteBuffer(string: "payload"),
                now: Self.t0
            )
        else {
            Issue.record("a fresh token did not send the request again")
            return
        }
        #expect(token == Self.fresh)
        #expect(machine.authRetry == .withFreshToken(answerReported: false))
        let connecting = machine.connecting()
        #expect(connecting)
        let again = machine.attached(expectsContinue: true)
        #expect(Self.text(again.parts) == ["payload", "<end>"] && again.requestComplete && !again.sendContinue)
        #expect(machine.requestBodyBytes == 7, "a resend counts nothing twice")

        guard
            case .forward(let forward) = machine.headArrived(
                try Self.head(200),
                token: Self.fresh,
                bodyKept: false,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("the retry's answer was held")
            return
        }
        #expect(!forward.close && forward.reportRejection == nil)
        #expect(forward.freshTokenAnswer?.token == Self.fresh && forward.freshTokenAnswer?.refused == false)
        #expect(machine.authRetry == .withFreshToken(answerReported: true))
        machine.responseBodySent(2)
        machine.finished()
        #expect(!machine.isLive && machine.response?.status == 200 && machine.responseBodyBytes == 2)
    }

    @Test func a401ToTheRetryIsPassedOnOnceWithoutAnotherRefresh() throws {
        var machine = Self.sent()
        _ = machine.headArrived(
            try Self.head(401),
            token: Self.refused,
            bodyKept: true,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        _ = machine.providerDecided(Self.fresh, keptBody: nil, now: Self.t0)
        _ = machine.heldEndArrived(keptBody: nil, now: Self.t0)
        _ = machine.attached(expectsContinue: false)
        guard
            case .forward(let forward) = machine.headArrived(
                try Self.head(401),
                token: Self.fresh,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a second 401 was held: a request goes again at most once")
            return
        }
        #expect(forward.reportRejection == nil, "the provider heard of this exchange's 401 already")
        #expect(forward.freshTokenAnswer?.refused == true, "the fresh token was refused too")
    }

    @Test func aHeld401WithoutAnotherTokenGoesToTheClientAsItCame() throws {
        var machine = Self.sent()
        _ = machine.headArrived(
            try Self.head(401),
            token: Self.refused,
            bodyKept: true,
            asksForNewNonce: false,
            framing: .chunked,
            now: Self.t0
        )
        _ = machine.heldBodyArrived(ByteBuffer(string: "no"), keptBody: nil, now: Self.t0)
        _ = machine.heldEndArrived(keptBody: nil, now: Self.t0)
        guard
            case .release(let forward, let head, let body, ended: true) = machine.providerDecided(
                Self.refused,
                keptBody: nil,
                now: Self.t0
            )
        else {
            Issue.record("a 401 the same token would get again was not released")
            return
        }
        #expect(head.status == 401 && forward.framing == .chunked, "as it came, framing included")
        #expect(forward.reportRejection == nil, "the provider was asked already")
        #expect(body.map { String(buffer: $0) } == ["no"])
        #expect(machine.response?.status == 401 && machine.isForwarding)
    }

    @Test func a401AskingForADPoPNonceGoesAgainWithTheSameTokenAndNoRefresh() throws {
        var machine = Self.sent()
        guard
            case .hold = machine.headArrived(
                try Self.head(401),
                token: Self.refused,
                bodyKept: true,
                asksForNewNonce: true,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a nonce 401 was not held")
            return
        }
        guard
            case .retry(let token, fresh: false) = machine.heldEndArrived(
                keptBody: ByteBuffer(string: "payload"),
                now: Self.t0
            )
        else {
            Issue.record("a complete nonce 401 was not retried")
            return
        }
        #expect(token == Self.refused && machine.authRetry == .forNonce)
        _ = machine.attached(expectsContinue: false)
        guard
            case .forward(let forward) = machine.headArrived(
                try Self.head(401),
                token: Self.refused,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a 401 after the nonce retry was held")
            return
        }
        #expect(forward.reportRejection == Self.refused, "the provider hears of a refusal it did not see")
        #expect(forward.freshTokenAnswer == nil)
    }

    @Test func aStaleConnectionIsReplayedOnceForABodylessIdempotentRequest() throws {
        var machine = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: false),
            timeouts: Self.timeouts
        )
        _ = machine.attached(expectsContinue: false)
        _ = machine.endArrived()
        let first = machine.upstreamFailed(
            connectionReused: true,
            idempotent: true,
            malformedResponse: false,
            unaskedSwitch: false,
            provesPossession: false
        )
        #expect(first == .replay(reprove: false) && machine.replayed && !machine.isForwarding)
        let replay = machine.attached(expectsContinue: false)
        #expect(Self.text(replay.parts) == ["<end>"])
        let second = machine.upstreamFailed(
            connectionReused: true,
            idempotent: true,
            malformedResponse: false,
            unaskedSwitch: false,
            provesPossession: false
        )
        #expect(second == .fail, "once only")
        let answer = machine.failed(status: 502)
        #expect(answer == .answer(close: false), "a bodyless request keeps its connection")
        #expect(!machine.isLive && machine.response?.status == 502)
    }

    @Test func aFailureAfterTheResponseBeganAbandonsAndAnUnaskedSwitchCloses() throws {
        var started = Self.sent()
        _ = started.headArrived(
            try Self.head(200),
            token: nil,
            bodyKept: false,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        let action = started.upstreamFailed(
            connectionReused: true,
            idempotent: true,
            malformedResponse: false,
            unaskedSwitch: false,
            provesPossession: false
        )
        #expect(action == .abandon)
        var answered = Self.sent()
        _ = answered.headArrived(
            try Self.head(200),
            token: nil,
            bodyKept: false,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        let late = answered.failed(status: 504)
        #expect(late == .abandon, "no answer of bearerd's own after a response head went out")
        #expect(!answered.isLive)

        var switched = Self.sent()
        _ = switched.upstreamFailed(
            connectionReused: false,
            idempotent: false,
            malformedResponse: true,
            unaskedSwitch: true,
            provesPossession: false
        )
        #expect(switched.closeReason == .brokenUpstream)
    }

    @Test func anAnswerBeforeTheRequestEndedClosesTheConnection() throws {
        var early = ExchangeStateMachine(.init(closes: false, hasBody: true, isUpgrade: false), timeouts: Self.timeouts)
        _ = early.attached(expectsContinue: false)
        _ = early.bodyArrived(ByteBuffer(string: "part"), maxBody: nil)
        guard
            case .forward(let forward) = early.headArrived(
                try Self.head(200),
                token: Self.refused,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("a 200 was held")
            return
        }
        #expect(forward.close && early.closeReason == .requestUnfinished)

        var refused = ExchangeStateMachine(
            .init(closes: false, hasBody: true, isUpgrade: false),
            timeouts: Self.timeouts
        )
        _ = refused.bodyArrived(ByteBuffer(string: "part"), maxBody: nil)
        let unread = refused.failed(status: 413)
        #expect(unread == .answer(close: true), "an unread body is not read to its end")

        var bodyless = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: false),
            timeouts: Self.timeouts
        )
        let kept = bodyless.failed(status: 403)
        #expect(kept == .answer(close: false), "its end is dropped when it comes")
    }

    @Test func anUpgradeIsTheConnectionsLastExchange() {
        var machine = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: true),
            timeouts: Self.timeouts
        )
        machine.closeAfter(.upgrade)
        _ = machine.attached(expectsContinue: false)
        _ = machine.endArrived()
        machine.switched()
        #expect(!machine.isLive && machine.response?.status == 101 && machine.closesConnection)

        var refused = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: true),
            timeouts: Self.timeouts
        )
        let last = refused.failed(status: 403)
        #expect(last == .answer(close: true), "nothing is parsed after an upgrade request")
        #expect(refused.closeReason == .upgrade)
    }

    @Test func theCloseDecisionIsOneRecordThatKeepsItsFirstReason() throws {
        var asked = ExchangeStateMachine(.init(closes: true, hasBody: false, isUpgrade: false), timeouts: Self.timeouts)
        asked.closeAfter(.retiring)
        #expect(asked.closeReason == .clientAsked)

        var retired = Self.sent()
        #expect(!retired.closesConnection)
        retired.closeAfter(.retiring)
        guard
            case .forward(let forward) = retired.headArrived(
                try Self.head(200),
                token: nil,
                bodyKept: false,
                asksForNewNonce: false,
                framing: .close,
                now: Self.t0
            )
        else {
            Issue.record("a 200 was held")
            return
        }
        #expect(forward.close && retired.closeReason == .retiring)
    }
}
