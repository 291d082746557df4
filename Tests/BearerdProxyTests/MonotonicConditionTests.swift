import Foundation
import Testing

@testable import BearerdProxy

/// The access log writer's wait: woken by its condition, or timed out on the monotonic clock.
@Suite("MonotonicCondition")
struct MonotonicConditionTests {
    @Test func aTimedWaitEndsAfterItsTimeUnlocked() {
        let condition = MonotonicCondition(value: false)
        let started = ContinuousClock.now
        #expect(!condition.lock(whenValue: true, timeoutSeconds: 0.2))
        let waited = ContinuousClock.now - started
        #expect(waited >= .milliseconds(190) && waited < .seconds(2), "\(waited)")
        // Not left locked by the timeout.
        condition.lock()
        condition.unlock()
    }

    @Test func aWaiterIsWokenByTheValue() async {
        let condition = MonotonicCondition(value: false)
        let woken = DispatchSemaphore(value: 0)
        let waiter = Thread {
            if condition.lock(whenValue: true, timeoutSeconds: 30) {
                condition.unlock()
                woken.signal()
            }
        }
        waiter.start()
        try? await Task.sleep(for: .milliseconds(50))
        condition.lock()
        condition.unlock(withValue: true)
        #expect(woken.wait(timeout: .now() + 5) == .success, "the waiter slept through the value")
    }
}
