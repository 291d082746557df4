import Foundation

/// The machine's three clocks at one moment, in seconds from some origin: the monotonic clock
/// (stops while the machine is suspended), the boot clock (counts suspended time too) and the
/// wall clock (`Date`, which NTP or a person may step).
package struct ClockReading: Sendable, Equatable {
    package var monotonic: Double
    package var boot: Double
    package var wall: Double

    package init(monotonic: Double, boot: Double, wall: Double) {
        self.monotonic = monotonic
        self.boot = boot
        self.wall = wall
    }
}

/// Reads the clocks; injected so that tests move them as a suspend or a step would.
package protocol ClockSource: Sendable {
    func read() -> ClockReading
}

/// The system's clocks: Swift's `SuspendingClock` is `CLOCK_MONOTONIC` and `ContinuousClock`
/// `CLOCK_BOOTTIME` on Linux.
package struct SystemClockSource: ClockSource {
    let origin = (suspending: SuspendingClock.now, continuous: ContinuousClock.now)

    package init() {}

    /// The three clocks read back to back, again if this thread stalled between the reads (a
    /// cgroup's CPU limit, a SIGSTOP), which would look like a suspend.
    package func read() -> ClockReading {
        var reading = ClockReading(monotonic: 0, boot: 0, wall: 0)
        for _ in 0..<3 {
            let before = SuspendingClock.now
            reading = ClockReading(
                monotonic: Self.seconds(before - self.origin.suspending),
                boot: Self.seconds(ContinuousClock.now - self.origin.continuous),
                wall: Date().timeIntervalSince1970
            )
            if SuspendingClock.now - before < .milliseconds(50) { break }
        }
        return reading
    }

    package static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) * 1e-18
    }
}

/// What happened to the clocks between two readings.
package enum ClockJump: Sendable, Equatable {
    /// The machine was suspended (or the VM paused) this many seconds: the boot clock moved
    /// further than the monotonic one.
    case suspended(seconds: Double)
    /// The wall clock moved this many seconds more than time passed (negative: back).
    case wallStepped(seconds: Double)
}

/// Notices a suspend or a wall-clock step by comparing successive readings: while the machine
/// runs, the three clocks advance together. A pure value: the engine feeds it readings.
package struct ClockWatch: Sendable {
    /// Differences smaller than this are noise (a tick that ran late, NTP's slewing).
    package static let threshold: Double = 2

    private var last: ClockReading?

    package init() {}

    /// Takes a reading; returns what happened since the previous one, if anything did.
    package mutating func observe(_ reading: ClockReading) -> [ClockJump] {
        guard reading.monotonic.isFinite, reading.boot.isFinite, reading.wall.isFinite else { return [] }
        defer { self.last = reading }
        guard let last = self.last else { return [] }
        let monotonic = reading.monotonic - last.monotonic
        let boot = reading.boot - last.boot
        let wall = reading.wall - last.wall
        var jumps: [ClockJump] = []
        if boot - monotonic > Self.threshold { jumps.append(.suspended(seconds: boot - monotonic)) }
        // The wall clock runs with the boot clock through a suspend; anything else is a step.
        if abs(wall - boot) > Self.threshold { jumps.append(.wallStepped(seconds: wall - boot)) }
        return jumps
    }
}
