import Dispatch
import NIOCore
import Synchronization

/// Whether every event loop of a group still runs tasks: what a `WATCHDOG=1` vouches for. A loop
/// blocked by a bug never runs the probe, so the answer is "no" once the deadline passes. The
/// deadline is kept by a dispatch timer, not by the loops being probed or a task that would
/// wait for them.
struct EventLoopLiveness: Sendable {
    let group: any EventLoopGroup

    /// `true` once every loop has run a no-op, `false` if one has not within `deadline`.
    func check(within deadline: Duration) async -> Bool {
        let loops = Array(self.group.makeIterator())
        guard !loops.isEmpty else { return true }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            let answer = Answer(continuation: continuation, waitingFor: loops.count)
            for loop in loops {
                loop.execute { answer.loopAnswered() }
            }
            // Bounded: the deadline derives from WATCHDOG_USEC, which may be anything.
            let bounded = min(max(deadline, .zero), .seconds(3600))
            let nanoseconds =
                bounded.components.seconds * 1_000_000_000 + bounded.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) {
                answer.finish(false)
            }
        }
    }

    /// Resumes its continuation exactly once: when the last loop answers, or at the deadline.
    private final class Answer: Sendable {
        private let state: Mutex<(continuation: CheckedContinuation<Bool, Never>?, waiting: Int)>

        init(continuation: CheckedContinuation<Bool, Never>, waitingFor count: Int) {
            self.state = Mutex((continuation, count))
        }

        func loopAnswered() {
            let done = self.state.withLock { state in
                state.waiting -= 1
                return state.waiting == 0
            }
            if done { self.finish(true) }
        }

        func finish(_ alive: Bool) {
            let continuation = self.state.withLock { state in
                defer { state.continuation = nil }
                return state.continuation
            }
            continuation?.resume(returning: alive)
        }
    }
}
