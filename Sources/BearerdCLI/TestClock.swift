import BearerdTokens
import Foundation
import Logging
import Synchronization

/// The engine's clocks, moved by a test in a debug build to act out a suspend or a clock step
/// without one (a real suspend needs the machine; `libfaketime` breaks this binary's arguments).
/// Compiled out of release builds, where setting the variable only earns a warning.
///
/// `TEST_CLOCK_OFFSET_FILE=PATH`: the file holds two numbers of seconds, `WALL BOOT`, added to
/// the wall clock and the boot clock (the monotonic clock is left alone). Writing `7200 7200`
/// is a two-hour sleep; `-600 0` steps the wall clock back ten minutes. (Not a `BEARERD_*`
/// name: those are config overrides, and an unknown one is an error.)
enum TestClock {
    static let variable = "TEST_CLOCK_OFFSET_FILE"

    /// The wall clock (JOSE's `iat` and `exp`, platform token files), the token engine's
    /// steady clock, and the clocks its wake detection watches.
    static func make(
        environment: [String: String],
        logger: Logger
    ) -> (wall: any TokenClock, engine: any TokenClock, clocks: any ClockSource) {
        guard let path = environment[Self.variable] else {
            return (SystemTokenClock(), SteadyTokenClock(), SystemClockSource())
        }
        #if DEBUG
        logger.warning("test switch: the engine's clocks are moved by \(path)")
        let offsets = OffsetFile(path: path)
        return (
            OffsetWallClock(offsets: offsets), OffsetSteadyClock(offsets: offsets), OffsetClockSource(offsets: offsets)
        )
        #else
        logger.warning("\(Self.variable) is a test switch of debug builds; this build ignores it")
        return (SystemTokenClock(), SteadyTokenClock(), SystemClockSource())
        #endif
    }
}

#if DEBUG
/// The offsets file, read again at most every 50 ms.
final class OffsetFile: Sendable {
    let path: String
    private let cache = Mutex<(at: ContinuousClock.Instant, wall: Double, boot: Double)?>(nil)

    init(path: String) {
        self.path = path
    }

    func offsets() -> (wall: Double, boot: Double) {
        let now = ContinuousClock.now
        if let cached = self.cache.withLock({ $0 }), now - cached.at < .milliseconds(50) {
            return (cached.wall, cached.boot)
        }
        let text = (try? String(contentsOfFile: self.path, encoding: .utf8)) ?? ""
        let numbers = text.split(whereSeparator: \.isWhitespace).prefix(2).map { word in
            Double(word).map { $0.isFinite ? min(max($0, -1e9), 1e9) : 0 } ?? 0
        }
        let wall = numbers.first ?? 0
        let boot = numbers.count > 1 ? numbers[1] : 0
        self.cache.withLock { $0 = (now, wall, boot) }
        return (wall, boot)
    }
}

/// The wall clock, moved by the file's first number.
struct OffsetWallClock: TokenClock {
    let offsets: OffsetFile

    var now: Date { Date().addingTimeInterval(self.offsets.offsets().wall) }

    func sleep(until deadline: Date) async throws {
        try await OffsetFile.sleep(for: deadline.timeIntervalSince(self.now))
    }
}

/// ``SteadyTokenClock`` with the boot clock moved by the file's second number (a suspend); the
/// wall clock it reports is moved by the first.
struct OffsetSteadyClock: TokenClock {
    let offsets: OffsetFile
    let origin = (wall: Date(), boot: ContinuousClock.now)

    var now: Date {
        self.origin.wall.addingTimeInterval(
            SystemClockSource.seconds(ContinuousClock.now - self.origin.boot) + self.offsets.offsets().boot
        )
    }

    var wallNow: Date { Date().addingTimeInterval(self.offsets.offsets().wall) }

    func sleep(until deadline: Date) async throws {
        try await OffsetFile.sleep(for: deadline.timeIntervalSince(self.now))
    }
}

extension OffsetFile {
    /// At most a second at a time, so a moved clock is seen soon.
    static func sleep(for seconds: TimeInterval) async throws {
        let delay = min(seconds, 1)
        guard delay > 0 else { return }
        try await Task.sleep(for: .seconds(delay))
    }
}

struct OffsetClockSource: ClockSource {
    let offsets: OffsetFile
    let system = SystemClockSource()

    func read() -> ClockReading {
        var reading = self.system.read()
        let (wall, boot) = self.offsets.offsets()
        reading.wall += wall
        reading.boot += boot
        return reading
    }
}
#endif
