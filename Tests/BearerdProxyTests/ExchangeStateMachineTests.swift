import NIOCore
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// ``ExchangeStateMachine`` alone, the request side: no channel, no upstream, no token provider.
/// (Whole exchanges, responses included: `ExchangeStateMachineExchangeTests`.)
@Suite("The request side of an exchange's machine")
struct ExchangeStateMachineTests {
    static let timeouts = ExchangeDeadlinesTests.deadlines().timeouts
    static let t0 = NIODeadline.uptimeNanoseconds(1_000_000_000)

    /// A machine for a request with a body, kept alive.
    static func machine(hasBody: Bool = true) -> ExchangeStateMachine {
        ExchangeStateMachine(.init(closes: false, hasBody: hasBody, isUpgrade: false), timeouts: Self.timeouts)
    }

    static func text(_ parts: [RequestParser.Part]) -> [String] {
        parts.map { part in
            switch part {
            case .body(let buffer): String(buffer: buffer)
            case .end: "<end>"
            case .head: "<head>"
            }
        }
    }

    static func forwarded(_ action: ExchangeStateMachine.PartAction) -> String? {
        switch action {
        case .forwardBody(let buffer): String(buffer: buffer)
        case .forwardEnd: "<end>"
        case .hold, .refuseBody, .drop: nil
        }
    }

    @Test func partsBeforeTheConnectionAreHeldInOrderAndFlowAfterIt() {
        var course = Self.machine()
        course.waitForToken()
        #expect(!course.clientMayRead(upstreamWritable: true), "reads wait for a connection")
        #expect(Self.forwarded(course.bodyArrived(ByteBuffer(string: "ab"), maxBody: nil)) == nil)
        let connecting = course.connecting()
        #expect(connecting)
        #expect(Self.forwarded(course.bodyArrived(ByteBuffer(string: "cd"), maxBody: nil)) == nil)
        let attachment = course.attached(expectsContinue: false)
        #expect(Self.text(attachment.parts) == ["ab", "cd"])
        #expect(!attachment.requestComplete)
        #expect(course.clientMayRead(upstreamWritable: true))
        #expect(!course.clientMayRead(upstreamWritable: false), "an upstream that cannot take more holds reads")
        #expect(Self.forwarded(course.bodyArrived(ByteBuffer(string: "ef"), maxBody: nil)) == "ef")
        #expect(Self.forwarded(course.endArrived()) == "<end>")
        #expect(course.requestBodyBytes == 6 && course.requestEnded)
        #expect(course.clientMayRead(upstreamWritable: false), "a complete request reads the next one")
    }

    @Test func aRequestThatEndedBeforeTheConnectionIsCompleteOnAttach() {
        var course = Self.machine()
        #expect(Self.forwarded(course.endArrived()) == nil)
        let attachment = course.attached(expectsContinue: true)
        #expect(Self.text(attachment.parts) == ["<end>"])
        #expect(attachment.requestComplete)
        #expect(!attachment.sendContinue, "nothing is to continue: the request is complete")
    }

    @Test func continueIsSentOnlyBeforeAnyOfTheBody() {
        var waiting = Self.machine()
        #expect(waiting.attached(expectsContinue: true).sendContinue)
        var started = Self.machine()
        _ = started.bodyArrived(ByteBuffer(string: "x"), maxBody: nil)
        #expect(!started.attached(expectsContinue: true).sendContinue, "the client did not wait for it")
        var notAsked = Self.machine()
        #expect(!notAsked.attached(expectsContinue: false).sendContinue)
    }

    @Test func theBodyLimitCountsHeldAndForwardedBytesAlike() {
        var course = Self.machine()
        #expect(Self.forwarded(course.bodyArrived(ByteBuffer(repeating: 0, count: 600), maxBody: 1000)) == nil)
        _ = course.attached(expectsContinue: false)
        #expect(Self.forwarded(course.bodyArrived(ByteBuffer(repeating: 0, count: 400), maxBody: 1000)) != nil)
        guard case .refuseBody(let limit) = course.bodyArrived(ByteBuffer(repeating: 0, count: 1), maxBody: 1000)
        else {
            Issue.record("1001 bytes passed a limit of 1000")
            return
        }
        #expect(limit == 1000)
    }

    @Test func theTokenWaitEndsWithA503OnlyWhileItStillWaits() {
        var course = Self.machine()
        course.waitForToken()
        #expect(course.tokenWaitExpired())
        let tokenCame = course.connecting()
        #expect(tokenCame, "the token came")
        #expect(!course.tokenWaitExpired(), "a token that came in time is not overtaken by the give-up")
        course.finished()
        let lateToken = course.connecting()
        #expect(!lateToken, "a token that comes after the answer starts nothing")
        course.waitForToken()
        #expect(!course.tokenWaitExpired())
    }

    @Test func aFinishedExchangeDropsWhatStillComes() {
        var course = Self.machine()
        _ = course.bodyArrived(ByteBuffer(string: "ab"), maxBody: nil)
        course.finished()
        guard case .drop = course.bodyArrived(ByteBuffer(string: "cd"), maxBody: nil),
            case .drop = course.endArrived()
        else {
            Issue.record("a part of a finished exchange was not dropped")
            return
        }
        #expect(!course.isLive)
    }
}
