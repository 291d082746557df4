import NIOCore

/// One timer per connection that serves deadlines which move on every request, without
/// scheduling and cancelling a task per request: moving a deadline later only records it, and
/// when the timer fires early it re-arms for the recorded deadline.
struct ConnectionTimer {
    private var scheduled: Scheduled<Void>?
    private var firesAt: NIODeadline?

    /// When the timer fires, if it is armed.
    var armedAt: NIODeadline? { self.firesAt }

    /// Whether ``arm(at:on:_:)`` has anything to do for `deadline`; checking first saves making
    /// a closure on every request.
    func needsArming(at deadline: NIODeadline) -> Bool {
        guard let firesAt else { return true }
        return firesAt > deadline
    }

    /// Makes sure the timer fires no later than `deadline`.
    mutating func arm(at deadline: NIODeadline, on loop: any EventLoop, _ fire: @escaping () -> Void) {
        guard self.needsArming(at: deadline) else { return }
        self.scheduled?.cancel()
        self.firesAt = deadline
        self.scheduled = loop.assumeIsolated().scheduleTask(deadline: deadline) { () -> Void in fire() }
    }

    /// Call first thing when the timer fires.
    mutating func fired() {
        self.scheduled = nil
        self.firesAt = nil
    }

    mutating func cancel() {
        self.scheduled?.cancel()
        self.scheduled = nil
        self.firesAt = nil
    }
}
