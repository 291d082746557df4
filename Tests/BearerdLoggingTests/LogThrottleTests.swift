import BearerdLogging
import InMemoryLogging
import Logging
import NIOCore
import NIOEmbedded
import Testing

@Suite("Repeated failures are logged once, then summarised")
struct LogThrottleTests {
    /// A throttled logger on an `EmbeddedEventLoop`, whose lines land in `logs`.
    struct Harness {
        let loop = EmbeddedEventLoop()
        let logs = InMemoryLogHandler()
        let log: ThrottledLogger

        init(level: Logger.Level = .trace) {
            var handler = self.logs
            handler.logLevel = level
            let captured = handler
            self.log = ThrottledLogger(logger: Logger(label: "test") { _ in captured }, eventLoop: self.loop)
        }

        func fail(_ kind: String = "token_server_unavailable") {
            self.log.warning(kind: kind, "request failed", metadata: ["status": "503"], now: self.loop.now)
        }

        var warnings: [InMemoryLogHandler.Entry] { self.logs.entries.filter { $0.level >= .warning } }

        static func count(_ entry: InMemoryLogHandler.Entry) -> Int {
            entry.metadata["count"].flatMap { Int("\($0)") } ?? 0
        }
    }

    @Test func aHundredThousandFailuresInTenSecondsWriteThreeLinesWithTheExactCount() {
        let harness = Harness(level: .info)
        for _ in 0..<100_000 {
            harness.loop.advanceTime(by: .microseconds(100))
            harness.fail()
        }
        // The failures stop: the last window's summary comes by itself.
        harness.loop.advanceTime(by: LogThrottle.window)
        let lines = harness.warnings
        // 10 s / 5 s windows, plus the first line.
        #expect(lines.count <= 10 / 5 + 1, "\(lines.map(\.message))")
        #expect(lines.first?.message == "request failed")
        #expect(lines.dropFirst().allSatisfy { $0.message == "request failed (repeated)" })
        #expect(1 + lines.map(Harness.count).reduce(0, +) == 100_000)
    }

    @Test func theFirstFailureIsWrittenAtOnceWithItsMetadataAndTheRestAtDebug() {
        let harness = Harness()
        harness.fail()
        #expect(harness.logs.entries.count == 1)
        let first = harness.logs.entries[0]
        #expect(first.level == .warning)
        #expect(first.metadata["status"] == "503")
        #expect(first.metadata["kind"] == "token_server_unavailable")
        harness.fail()
        harness.fail()
        #expect(harness.warnings.count == 1)
        #expect(harness.logs.entries.dropFirst().map(\.level) == [.debug, .debug])
        #expect(harness.logs.entries.last?.metadata["status"] == "503")
    }

    @Test func aBurstThatStopsIsSummarisedWithinTheWindow() {
        let harness = Harness(level: .info)
        for _ in 0..<10 {
            harness.fail()
            harness.loop.advanceTime(by: .milliseconds(100))
        }
        #expect(harness.warnings.count == 1)
        // 1 s in: the summary is due 5 s after the first line, with no failure to bring it.
        harness.loop.advanceTime(by: .seconds(4))
        let summary = harness.warnings.last
        #expect(harness.warnings.count == 2)
        #expect(summary?.message == "request failed (repeated)")
        #expect(summary?.metadata["kind"] == "token_server_unavailable")
        #expect(summary.map(Harness.count) == 9)
        #expect(summary?.metadata["first_seen"] == "4.90s ago")
        #expect(summary?.metadata["last_seen"] == "4.10s ago")
        // Nothing more counted: no more lines, and no task left running.
        harness.loop.advanceTime(by: .seconds(60))
        #expect(harness.warnings.count == 2)
    }

    @Test func afterAQuietWindowTheNextFailureIsWrittenAtOnceAgain() {
        let harness = Harness(level: .info)
        harness.fail()
        harness.loop.advanceTime(by: .seconds(6))
        harness.fail()
        #expect(harness.warnings.map(\.message) == ["request failed", "request failed"])
    }

    @Test func twoKindsAreThrottledAndCountedApart() {
        let harness = Harness(level: .info)
        for _ in 0..<100 {
            harness.fail("token_server_unavailable")
            harness.fail("upstream_unreachable")
            harness.fail("upstream_unreachable")
            harness.loop.advanceTime(by: .milliseconds(10))
        }
        harness.loop.advanceTime(by: LogThrottle.window)
        let lines = harness.warnings
        let byKind = Dictionary(grouping: lines) { "\($0.metadata["kind"] ?? "")" }
        #expect(lines.count == 4)
        #expect(byKind["token_server_unavailable"]?.map(Harness.count) == [0, 99])
        #expect(byKind["upstream_unreachable"]?.map(Harness.count) == [0, 199])
    }

    @Test func flushWritesWhatIsCountedAtShutdown() {
        let harness = Harness(level: .info)
        harness.fail()
        harness.fail()
        harness.log.flush()
        #expect(harness.warnings.map(Harness.count) == [0, 1])
        harness.loop.advanceTime(by: .seconds(60))
        #expect(harness.warnings.count == 2)
    }

    @Test func theKindsKeptAreBounded() {
        var throttle = LogThrottle()
        let now = NIODeadline.uptimeNanoseconds(0)
        for index in 0..<1000 {
            _ = throttle.record("kind-\(index)", level: .warning, message: "m", now: now)
        }
        let summaries = throttle.drain()
        #expect(summaries.map(\.kind) == [LogThrottle.overflowKind])
        #expect(summaries.first?.count == 1000 - LogThrottle.maxKinds - 1)
    }
}
