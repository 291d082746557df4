import Foundation
import Logging

/// Suspend, wake and clock steps: timers on the monotonic clock do not run while a laptop sleeps
/// or a VM is paused, and NTP may step the wall clock. The engine's clock follows the boot clock,
/// so a suspend moves it forward and a wall step does not move it at all. The engine looks at the
/// clocks at each timer, each request that finds no token, and every ``WakeMonitor/interval``
/// (``ClockWatch``); after a wake it judges the token again, refreshes at once if that is due,
/// and re-plans every timer.
extension TokenManager {
    /// For this long after a wake, failing to reach the token server is the network coming back
    /// (no route, DNS, refused): it counts toward neither the backoff nor
    /// `auth.max_refreshes_per_minute`, bearerd tries again every ``wakeRetry``, and a request
    /// that finds no token waits for the next try (within `proxy.token_wait`) instead of a 503.
    static let wakeGrace: TimeInterval = 30
    static let wakeRetry: TimeInterval = 1

    /// Looks at the clocks, and deals with a suspend or a step since the last look.
    package func noticeClockJumps() {
        for jump in self.clockWatch.observe(self.clocks.read()) {
            self.clockJumped(jump)
        }
    }

    private func clockJumped(_ jump: ClockJump) {
        let now = self.clock.now
        switch jump {
        case .suspended(let seconds):
            self.logger.notice(
                "the machine was suspended; judging the token by the clock again",
                metadata: ["suspended_s": "\(String(format: "%.0f", seconds))"]
            )
            self.wokeAt = now
            // A new network, perhaps: the backoff of failures before the sleep does not carry on,
            // unless the server itself said when to come back.
            self.consecutiveFailures = 0
            if case .waiting(let session, let retryAt, let reason) = self.state, retryAt > now,
                self.serverRetryAt.map({ $0 <= now }) ?? true
            {
                self.transition(to: .waiting(session, retryAt: now, reason: reason))
            }
        case .wallStepped(let seconds):
            // Every deadline is on the engine's clock, which the step did not move: when the
            // token arrived, how long it is good for, the retries. Only what is shown moves,
            // and an expiry taken on the wall clock alone comes earlier after a step forward
            // (the clock may have been behind when it was read: NTP at boot).
            self.logger.notice(
                "the wall clock was stepped; the refreshes stay on schedule",
                metadata: ["step_s": "\(String(format: "%.0f", seconds))"]
            )
            if seconds > 0 { self.bringWallAnchoredExpiryForward(by: seconds) }
        }
        // The scheduler plans again from the state as the clock now shows it.
        self.changes.signal()
    }

    /// The session in hand's times, earlier by `seconds`, when its expiry was read on the wall
    /// clock alone (``Session/wallAnchored``).
    private func bringWallAnchoredExpiryForward(by seconds: TimeInterval) {
        func moved(_ session: Session) -> Session {
            var session = session
            session.expiresAt.addTimeInterval(-seconds)
            session.usableUntil.addTimeInterval(-seconds)
            session.refreshAt.addTimeInterval(-seconds)
            return session
        }
        switch self.state {
        case .ready(let session) where session.wallAnchored:
            self.transition(to: .ready(moved(session)))
        case .waiting(let session?, let retryAt, let reason) where session.wallAnchored:
            self.transition(to: .waiting(moved(session), retryAt: retryAt, reason: reason))
        case .ready, .waiting, .refreshing, .loggedOut:
            break
        }
    }

    /// Whether `now` is within ``wakeGrace`` of a wake.
    func justWoke(_ now: Date) -> Bool {
        guard let woke = self.wokeAt else { return false }
        return now >= woke && now.timeIntervalSince(woke) < Self.wakeGrace
    }
}
