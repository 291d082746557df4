import Foundation

/// Wall-clock time for the token engine, injected so tests run on a manual clock. Expiry is a
/// wall-clock fact (`exp`, `Date`), so this is `Date`-based; sleeps are re-planned after each
/// wake-up, which absorbs clock steps.
package protocol TokenClock: Sendable {
    var now: Date { get }
    /// Returns at `deadline` or later; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Date) async throws
}

/// The system's clock.
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
