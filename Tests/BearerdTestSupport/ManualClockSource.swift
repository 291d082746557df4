import BearerdTokens
import Synchronization

/// The machine's three clocks as a test sets them: ``run(_:)`` moves all three, ``suspend(_:)``
/// the boot and wall clocks only, ``stepWall(_:)`` the wall clock only.
package final class ManualClockSource: ClockSource {
    private let reading = Mutex(ClockReading(monotonic: 0, boot: 0, wall: 1_800_000_000))

    package init() {}

    package func read() -> ClockReading { self.reading.withLock { $0 } }

    package func run(_ seconds: Double) {
        self.reading.withLock {
            $0.monotonic += seconds
            $0.boot += seconds
            $0.wall += seconds
        }
    }

    package func suspend(_ seconds: Double) {
        self.reading.withLock {
            $0.boot += seconds
            $0.wall += seconds
        }
    }

    package func stepWall(_ seconds: Double) {
        self.reading.withLock { $0.wall += seconds }
    }
}
