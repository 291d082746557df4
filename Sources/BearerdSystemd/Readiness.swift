import Synchronization

/// Becomes ready once every named part has said so (the proxy's listeners, the admin socket):
/// what `READY=1` waits for.
package final class Readiness: Sendable {
    private struct State {
        var missing: Set<String>
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextID = 0
    }

    private let state: Mutex<State>

    package init(parts: Set<String>) {
        self.state = Mutex(State(missing: parts))
    }

    /// `part` is up.
    package func mark(_ part: String) {
        let waiters = self.state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.missing.remove(part)
            guard state.missing.isEmpty else { return [] }
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Returns `true` once every part is up, or `false` if the task is cancelled first.
    package func wait() async -> Bool {
        let id = self.state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let answer: Bool? = self.state.withLock { state in
                    if state.missing.isEmpty { return true }
                    if Task.isCancelled { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let answer { continuation.resume(returning: answer) }
            }
        } onCancel: {
            self.state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
        }
    }
}
