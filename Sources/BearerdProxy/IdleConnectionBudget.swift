import Synchronization

/// `upstream.max_idle_connections` over every event loop's pool: a pool keeps a connection
/// idle only while it holds one of these slots, so `threads` × the limit can never pass the
/// open-file limit.
final class IdleConnectionBudget: Sendable {
    let limit: Int
    private let used = Atomic<Int>(0)

    init(limit: Int) {
        self.limit = limit
    }

    /// Takes a slot for a connection about to go idle; `false` when all are taken.
    func take() -> Bool {
        var current = self.used.load(ordering: .relaxed)
        while current < self.limit {
            let (exchanged, original) = self.used.compareExchange(
                expected: current,
                desired: current + 1,
                ordering: .relaxed
            )
            if exchanged { return true }
            current = original
        }
        return false
    }

    /// Returns `count` slots of connections that left the idle list.
    func give(_ count: Int = 1) {
        guard count > 0 else { return }
        self.used.subtract(count, ordering: .relaxed)
    }

    /// Slots in use, for tests.
    var inUse: Int { self.used.load(ordering: .relaxed) }
}
