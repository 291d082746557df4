import Synchronization

/// A count that several event loops draw on and that never passes its limit: idle upstream
/// connections over every loop's pool (`upstream.max_idle_connections`, so `threads` × the
/// limit can never pass the open-file limit), and bytes of request bodies kept for a retry
/// over every connection (``ProxySettings/retryBufferTotal``).
final class SharedBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes `amount`; `false` (and nothing taken) when that would pass the limit.
    func take(_ amount: Int = 1) -> Bool {
        var current = self.used.load(ordering: .relaxed)
        while current + amount <= self.limit {
            let (exchanged, original) = self.used.compareExchange(
                expected: current,
                desired: current + amount,
                ordering: .relaxed
            )
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Returns `amount` taken earlier.
    func give(_ amount: Int = 1) {
        guard amount > 0 else { return }
        self.used.subtract(amount, ordering: .relaxed)
    }

    /// What is taken now, for tests and metrics.
    var inUse: Int { self.used.load(ordering: .relaxed) }
}
