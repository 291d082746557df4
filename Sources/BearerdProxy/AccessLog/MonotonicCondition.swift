#if canImport(Glibc)
import Glibc
#endif

/// A lock with a boolean condition, as NIO's `ConditionLock`, whose timed wait counts on
/// CLOCK_MONOTONIC: `ConditionLock` waits until a wall-clock time (pthread_cond_timedwait's
/// default clock), so a step of the wall clock back by an hour would hold the access lines'
/// once-a-second flush for an hour. Deadlines live on the monotonic clock.
final class MonotonicCondition: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>
    /// Guarded by `mutex`.
    private var value: Bool

    init(value: Bool) {
        self.value = value
        self.mutex = .allocate(capacity: 1)
        self.mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(self.mutex, nil)
        self.condition = .allocate(capacity: 1)
        self.condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(self.condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(self.condition)
        pthread_mutex_destroy(self.mutex)
        self.condition.deallocate()
        self.mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(self.mutex) }

    func unlock() { pthread_mutex_unlock(self.mutex) }

    /// Sets the value, unlocks, and wakes the waiters.
    func unlock(withValue value: Bool) {
        self.value = value
        pthread_mutex_unlock(self.mutex)
        pthread_cond_broadcast(self.condition)
    }

    /// Locks once the value is `wanted` and returns `true`; or returns `false`, not locked, when
    /// `seconds` pass first (on the monotonic clock).
    func lock(whenValue wanted: Bool, timeoutSeconds seconds: Double) -> Bool {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanoseconds = Int(now.tv_nsec) + Int(seconds.truncatingRemainder(dividingBy: 1) * 1e9)
        var deadline = timespec(
            tv_sec: now.tv_sec + Int(seconds) + nanoseconds / 1_000_000_000,
            tv_nsec: nanoseconds % 1_000_000_000
        )
        pthread_mutex_lock(self.mutex)
        while self.value != wanted {
            if pthread_cond_timedwait(self.condition, self.mutex, &deadline) == ETIMEDOUT, self.value != wanted {
                pthread_mutex_unlock(self.mutex)
                return false
            }
        }
        return true
    }
}
