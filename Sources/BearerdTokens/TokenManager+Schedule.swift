import BearerdAuth
import Foundation
import Logging

extension TokenManager {
    /// How often the timer looks at the clocks when nothing else is due, so that a wake or a
    /// clock step is noticed promptly even when no request comes: the token is then refreshed
    /// at once if it is due. Three clock reads and a look at the state per look.
    static let clockLookInterval: TimeInterval = 2

    /// The one timer (``TokenRefreshService``), on the injected clock, until the task is
    /// cancelled: sleeps until the next refresh, retry or look at the clocks is due, or until the
    /// state changes, then looks again.
    package func runScheduler() async {
        while !Task.isCancelled {
            let (deadline, generation) = self.schedule()
            let look = self.clock.now.addingTimeInterval(Self.clockLookInterval)
            let wake = min(deadline ?? look, look)
            let clock = self.clock
            await withTaskGroup(of: Void.self) { group in
                group.addTask { try? await clock.sleep(until: wake) }
                group.addTask { await self.changes.wait(since: generation) }
                await group.next()
                group.cancelAll()
            }
            if Task.isCancelled { return }
            if self.changes.generation == generation, deadline.map({ self.clock.now < $0 }) ?? true {
                // Woken only to look at the clocks: the rest waits for its own time (a failed
                // write is tried again every ``RefreshStateMachine/saveRetryInterval``, not at each look).
                self.noticeClockJumps()
                if self.changes.generation == generation { continue }
            }
            await self.timerFired()
        }
    }

    /// When the timer is due next (`nil`: only after a change), and the state generation that
    /// answer belongs to.
    func schedule() -> (Date?, Int) {
        let due = self.machine.nextWake(now: self.clock.now, saveBehind: self.storeBehind || self.fleetRow.behind)
        return (due, self.changes.generation)
    }

    /// Looks at the clocks, retries a write that failed, and starts the attempt that is due.
    func timerFired() async {
        self.noticeClockJumps()
        self.writeStore()
        await self.catchUpShared()
        let inputs = self.machine.watchesPlatformInputs ? self.source.clientGrantInputs() : nil
        guard let reason = self.step({ $0.timerFired(now: self.clock.now, platformInputs: inputs) }) else { return }
        if reason == .platformTokenRenewed {
            self.logger.notice("the platform renewed its token; asking for a token with it at once")
        }
        await self.refresh(reason: reason)
    }

    /// The answer to a request for `path` retried with a fresh token.
    package func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async {
        let paused = self.step {
            $0.freshTokenAnswered(token, path: path, refused: refused, now: self.clock.now)
        }
        guard paused else { return }
        self.logger.log(
            level: self.machine.forcedRefresh.pauses == 1 ? .warning : .debug,
            "the upstream refuses freshly refreshed tokens too on this path; its 401s force no refresh for a while",
            metadata: [
                "path_prefix": "\(PathPrefix.of(path))",
                "refused_in_a_row": "\(RefreshPolicy.freshRejectionsBeforePause)",
                "pause_s": "\(Int(RefreshPolicy.forcedRefreshPause))",
                "hint": "a path that answers 401 whatever the token: check the account's rights, or deny_paths",
            ]
        )
    }

    /// Returns once no refresh is in flight: at shutdown, the token client is closed only after
    /// the answer to a refresh token already sent has been stored (a rotated refresh token lost
    /// here would log the session out).
    package func settle() async {
        await self.awaitInFlight()
    }
}
