import NIOConcurrencyHelpers
import NIOCore

/// The token provider's answers a connection waits for on its event loop (a token, a decision
/// about a held 401), each asked in a task of its own. They are counted so that shutdown can
/// wait for the last: a task that completed its promise after the event loops stopped would
/// schedule work on a loop that is gone (which SwiftNIO's strict mode turns into a crash).
package final class ProviderCalls: Sendable {
    private struct State {
        var next = 0
        var running: [Int: Task<Void, Never>] = [:]
        /// Calls whose task ended before it was recorded.
        var ended: Set<Int> = []
    }

    private let state = NIOLockedValueBox(State())

    package init() {}

    /// How many answers are still to come.
    package var inFlight: Int { self.state.withLockedValue { $0.running.count } }

    /// Runs `body` in a task and answers on `loop`.
    func answer<Value: Sendable>(
        on loop: any EventLoop,
        _ body: @escaping @Sendable () async throws -> Value
    ) -> EventLoopFuture<Value> {
        let promise = loop.makePromise(of: Value.self)
        let id = self.state.withLockedValue { state in
            state.next += 1
            return state.next
        }
        let task = Task {
            do {
                promise.succeed(try await body())
            } catch {
                promise.fail(error)
            }
            self.state.withLockedValue { state in
                if state.running.removeValue(forKey: id) == nil { state.ended.insert(id) }
            }
        }
        self.state.withLockedValue { state in
            if state.ended.remove(id) == nil { state.running[id] = task }
        }
        return promise.futureResult
    }

    /// Tells the provider something whose answer nobody waits for (a 401, a fresh token's
    /// fate): no promise, so nothing is left to complete on a loop.
    func tell(_ body: @escaping @Sendable () async -> Void) {
        Task { await body() }
    }

    /// Cancels the calls still running and waits until each has answered, at most `limit`.
    /// Returns whether none is left.
    package func drain(within limit: Duration) async -> Bool {
        for task in self.state.withLockedValue({ Array($0.running.values) }) { task.cancel() }
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while self.inFlight > 0 {
            guard clock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return true
    }
}
