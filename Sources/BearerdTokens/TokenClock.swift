import Foundation

/// Time for the token engine, injected so tests run on a manual clock.
///
/// Two readings: `now`, on which every deadline is planned, and `wallNow`, the wall clock, for
/// the facts that are wall-clock times (`exp`, a `Date` header, what the store and the fleet's
/// row keep, what `status` and logs show). For the engine ``SteadyTokenClock`` keeps them apart,
/// so a step of the wall clock (NTP, a person) cannot move a deadline; elsewhere (JOSE's `iat`,
/// `exp` checks) the two are the same.
package protocol TokenClock: Sendable {
    var now: Date { get }
    /// The wall clock; `now` unless the clock keeps its own steady time.
    var wallNow: Date { get }
    /// Returns at `deadline` (on `now`) or later; throws `CancellationError` when the task is
    /// cancelled.
    func sleep(until deadline: Date) async throws
}

extension TokenClock {
    package var wallNow: Date { self.now }

    /// How far the wall clock is ahead of `now`: what a wall-clock time loses to become a time
    /// on `now`, and what a time on `now` gains to be shown or stored. Zero until the wall clock
    /// is stepped.
    package var wallOffset: TimeInterval {
        let offset = self.wallNow.timeIntervalSince(self.now)
        return offset.isFinite ? offset : 0
    }
}

/// The system's wall clock.
package struct SystemTokenClock: TokenClock {
    package init() {}

    package var now: Date { Date() }

    /// The longest single sleep; callers re-plan after each wake-up, so a deadline further out
    /// (or one no `Duration` can hold) is reached in steps.
    static let longestSleep: TimeInterval = 86_400

    package func sleep(until deadline: Date) async throws {
        let delay = deadline.timeIntervalSinceNow
        guard delay > 0 else { return }
        try await Task.sleep(for: .seconds(delay.isFinite ? min(delay, Self.longestSleep) : Self.longestSleep))
    }
}

/// The token engine's clock: the wall clock as it read at start, carried forward by the boot
/// clock (`CLOCK_BOOTTIME`, which counts a suspend and which no one steps). When the token
/// arrived and how long it is good for stay put whatever the wall clock does; `wallNow` is the
/// wall clock itself, for `exp`, the store and display.
package struct SteadyTokenClock: TokenClock {
    private let origin: (wall: Date, boot: ContinuousClock.Instant)

    package init() {
        self.origin = (Date(), ContinuousClock.now)
    }

    package var now: Date {
        self.origin.wall.addingTimeInterval(SystemClockSource.seconds(ContinuousClock.now - self.origin.boot))
    }

    package var wallNow: Date { Date() }

    package func sleep(until deadline: Date) async throws {
        let delay = deadline.timeIntervalSince(self.now)
        guard delay > 0 else { return }
        let longest = SystemTokenClock.longestSleep
        try await Task.sleep(for: .seconds(delay.isFinite ? min(delay, longest) : longest))
    }
}
