import NIOCore

/// The request body so far, in one buffer, kept for a retry after a 401 while it fits
/// `proxy.retry_body_limit` and the shared ``ProxySettings/retryBufferTotal``. Its capacity is
/// taken from the shared ``SharedBudget`` as it grows and given back when it goes.
struct RetryBody {
    private enum State {
        /// No retry is possible (a method never retried, a body too large, the total reached),
        /// or the response went to the client.
        case notKept
        /// The whole body so far (`nil`: none yet), and the capacity it holds of the budget.
        case keeping(ByteBuffer?, reserved: Int)
    }

    private var state: State
    private let budget: SharedBudget?

    /// Nothing is kept.
    init() {
        self.state = .notKept
        self.budget = nil
    }

    /// Keeps the body, counting its bytes against `budget`.
    init(budget: SharedBudget) {
        self.state = .keeping(nil, reserved: 0)
        self.budget = budget
    }

    /// The whole body so far is kept (a bodyless request keeps nothing, and still may go again).
    var isKept: Bool {
        if case .keeping = self.state { return true }
        return false
    }

    /// The body kept, if any.
    var body: ByteBuffer? {
        if case .keeping(let body, _) = self.state { return body }
        return nil
    }

    /// Capacity taken from the budget.
    var reserved: Int {
        if case .keeping(_, let reserved) = self.state { return reserved }
        return 0
    }

    /// Appends a piece of the body, or lets the body go when it no longer fits.
    mutating func keep(_ piece: ByteBuffer, limit: Int) {
        guard case .keeping(let body, let reserved) = self.state else { return }
        var kept = body ?? ByteBufferAllocator().buffer(capacity: piece.readableBytes)
        self.state = .keeping(nil, reserved: reserved)  // one owner while it grows: no copy
        guard kept.readableBytes + piece.readableBytes <= limit else { return self.drop() }
        kept.writeImmutableBuffer(piece)
        let growth = kept.capacity - reserved
        if growth > 0 {
            guard self.budget?.take(growth) ?? false else { return self.drop() }
        }
        self.state = .keeping(kept, reserved: reserved + max(growth, 0))
    }

    /// The body is not needed any more (or cannot be kept): its bytes go back.
    mutating func drop() {
        self.budget?.give(self.reserved)
        self.state = .notKept
    }
}
