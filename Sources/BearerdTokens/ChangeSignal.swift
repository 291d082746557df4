import Synchronization

/// Wakes whoever waits for the engine's state to change (the proactive refresh timer). A waiter
/// whose task is cancelled is resumed at once from the cancellation handler, under the same lock,
/// so no task is started to clean up after it.
final class ChangeSignal: Sendable {
    private struct State {
        var generation = 0
        var nextID = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }

    private let state = Mutex(State())

    /// Grows by one at each change.
    var generation: Int { self.state.withLock { $0.generation } }

    /// The state changed: wakes every waiter.
    func signal() {
        let waiters = self.state.withLock { state in
            state.generation += 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once the generation is past `generation`, or when the task is cancelled.
    func wait(since generation: Int) async {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = self.state.withLock { state in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }
}
