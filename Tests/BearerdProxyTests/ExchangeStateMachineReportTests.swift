import BearerdAuth
import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// What the token provider hears of an exchange's 401s, through the machine: once per exchange,
/// across a replay, and for a nonce 401 that could not be held.
@Suite("What the provider hears of an exchange's 401s")
struct ExchangeStateMachineReportTests {
    static let token = BearerToken("sent-token")
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    static func machine() -> ExchangeStateMachine {
        var machine = ExchangeStateMachine(
            .init(closes: false, hasBody: false, isUpgrade: false),
            timeouts: ExchangeDeadlinesTests.deadlines().timeouts
        )
        _ = machine.attached(expectsContinue: false)
        _ = machine.endArrived()
        return machine
    }

    static func head(_ fields: String = "content-length: 100\r\n") throws -> ResponseHead {
        try ExchangeStateMachineExchangeTests.head(401, fields)
    }

    /// A 401 held for a refresh whose pooled connection then closes: the request is replayed, and
    /// the replay's 401 goes to the client without asking the provider a second time (as before
    /// the machine: the report survived the replay). Found by review: the machine forgot it.
    @Test func aReplayDuringAHeld401DoesNotAskTheProviderAgain() throws {
        var machine = Self.machine()
        guard
            case .askProvider = machine.headArrived(
                try Self.head(),
                token: Self.token,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("the 401 was not held")
            return
        }
        let replay = machine.upstreamFailed(
            connectionReused: true,
            idempotent: true,
            malformedResponse: false,
            unaskedSwitch: false,
            provesPossession: false
        )
        #expect(replay == .replay(reprove: false))
        _ = machine.attached(expectsContinue: false)
        guard
            case .forward(let forward) = machine.headArrived(
                try Self.head(),
                token: Self.token,
                bodyKept: true,
                asksForNewNonce: false,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("the replay's 401 was held again: the provider would be asked twice")
            return
        }
        #expect(forward.reportRejection == nil, "the provider heard of this exchange's 401 already")
        #expect(!machine.authRetry.retried, "replayed, not retried after a 401")
    }

    /// A DPoP-nonce 401 too large to hold goes to the client unretried: like any 401 passed on
    /// unretried, the provider hears the token was refused.
    @Test func aNonce401TooLargeToHoldIsReported() throws {
        var machine = Self.machine()
        guard
            case .hold = machine.headArrived(
                try Self.head(),
                token: Self.token,
                bodyKept: true,
                asksForNewNonce: true,
                framing: .length,
                now: Self.t0
            )
        else {
            Issue.record("the nonce 401 was not held")
            return
        }
        let big = ByteBuffer(repeating: 0x20, count: HeldResponse.maxBody + 1)
        guard
            case .release(let forward, _, let body, ended: false) = machine.heldBodyArrived(
                big,
                keptBody: nil,
                now: Self.t0
            )
        else {
            Issue.record("a body over the hold limit did not release the 401")
            return
        }
        #expect(forward.reportRejection == Self.token)
        #expect(body.map(\.readableBytes) == [HeldResponse.maxBody + 1])
        #expect(machine.authRetry == .reported && machine.isForwarding)
    }

    @Test func aRefreshHoldThatIsReleasedIsNotReportedTwice() throws {
        var machine = Self.machine()
        _ = machine.headArrived(
            try Self.head(),
            token: Self.token,
            bodyKept: true,
            asksForNewNonce: false,
            framing: .length,
            now: Self.t0
        )
        _ = machine.heldEndArrived(keptBody: nil, now: Self.t0)
        guard case .release(let forward, _, _, ended: true) = machine.providerDecided(nil, keptBody: nil, now: Self.t0)
        else {
            Issue.record("a 401 without another token was not released")
            return
        }
        #expect(forward.reportRejection == nil, "asking for a refresh was the report")
    }
}
