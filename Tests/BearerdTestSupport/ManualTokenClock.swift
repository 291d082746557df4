import BearerdTokens
import Foundation
import Synchronization

/// A clock that moves only when a test says so; sleepers wake when it passes their deadline.
package final class ManualTokenClock: TokenClock {
    private struct Sleeper {
        var id: Int
        var deadline: Date
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Date
        /// How far the wall clock is from `now` (``stepWall(by:)``).
        var wallOffset: TimeInterval = 0
        var sleepers: [Sleeper] = []
        var nextID = 0
    }

    private let state: Mutex<State>

    package init(now: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.state = Mutex(State(now: now))
    }

    package var now: Date { self.state.withLock { $0.now } }

    /// The wall clock: `now` until a test steps it.
    package var wallNow: Date { self.state.withLock { $0.now.addingTimeInterval($0.wallOffset) } }

    /// Steps the wall clock by `seconds` (back when negative), as NTP does; `now`, on which the
    /// engine plans, stays where it is, as the boot clock does.
    package func stepWall(by seconds: TimeInterval) {
        self.state.withLock { $0.wallOffset += seconds }
    }

    /// How many tasks are sleeping on this clock.
    package var sleeperCount: Int { self.state.withLock { $0.sleepers.count } }

    package func sleep(until deadline: Date) async throws {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let resume: Bool? = self.state.withLock { state in
                    if Task.isCancelled { return false }
                    if state.now >= deadline { return true }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return nil
                }
                switch resume {
                case true?: continuation.resume()
                case false?: continuation.resume(throwing: CancellationError())
                case nil: break
                }
            }
        } onCancel: {
            let sleeper = self.state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// The earliest deadline a task sleeps until.
    package var nextDeadline: Date? { self.state.withLock { $0.sleepers.map(\.deadline).min() } }

    /// Moves time forward and wakes every sleeper whose deadline has come.
    package func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self.advance(to: self.now.addingTimeInterval(Double(seconds) + Double(attoseconds) / 1e18))
    }

    package func advance(to date: Date) {
        let due = self.state.withLock { state -> [Sleeper] in
            state.now = max(state.now, date)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Sets the time, back as well as forward (a wall-clock step); wakes the sleepers now due.
    package func set(_ date: Date) {
        self.state.withLock { $0.now = date }
        self.advance(to: date)
    }

    /// Waits (without sleeping on real time) until `count` tasks sleep on this clock.
    package func waitForSleepers(_ count: Int = 1) async throws {
        for _ in 0..<100_000 {
            if self.sleeperCount >= count { return }
            await Task.yield()
        }
        throw TestClientError("fewer than \(count) sleepers on the manual clock")
    }
}
