import BearerdAuth
import Foundation
import Logging

extension TokenManager {
    /// Runs the proactive refresh timer until the task is cancelled: sleeps until the next
    /// refresh or retry is due, or until the state changes, then looks again.
    package func runScheduler() async {
        while !Task.isCancelled {
            let (deadline, generation) = self.schedule()
            let clock = self.clock
            await withTaskGroup(of: Void.self) { group in
                if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
                group.addTask { await self.changes.wait(since: generation) }
                await group.next()
                group.cancelAll()
            }
            if Task.isCancelled { return }
            await self.timerFired()
        }
    }

    /// When the scheduler should look next (`nil`: only after a change), and the state
    /// generation that answer belongs to.
    func schedule() -> (Date?, Int) {
        var due: Date? =
            switch self.state {
            case .ready(let session): session.refreshAt
            case .waiting(_, let retryAt, _): retryAt
            case .refreshing: nil
            case .loggedOut: self.source.hasClientGrant ? self.clock.now : nil
            }
        if case .waiting = self.state, self.platformInputsFailed != nil, let waitUntil = due {
            // Whether the platform renewed its token is a look at a local file.
            due = min(waitUntil, self.clock.now.addingTimeInterval(Self.platformPollInterval))
        }
        guard self.storeBehind || self.fleetBehind else { return (due, self.changes.generation) }
        let retrySave = self.clock.now.addingTimeInterval(Self.saveRetryInterval)
        return (min(due ?? retrySave, retrySave), self.changes.generation)
    }

    /// Refreshes if a refresh or a retry is due.
    func timerFired() async {
        self.noticeClockJumps()
        self.writeStore()
        await self.catchUpShared()
        let now = self.clock.now
        switch self.state {
        case .ready(let session) where now >= session.refreshAt:
            await self.refresh(reason: "proactive")
        case .waiting(_, let retryAt, _) where now >= retryAt:
            await self.refresh(reason: "retry")
        case .waiting where self.platformTokenRenewed():
            self.logger.notice("the platform renewed its token; asking for a token with it at once")
            self.serverRetryAt = nil
            await self.refresh(reason: "platform_token_renewed")
        case .loggedOut where self.source.hasClientGrant:
            await self.refresh(reason: "client_token")
        default:
            break
        }
    }

    /// Whether the platform's files the client grant sends changed since it last failed with them.
    func platformTokenRenewed() -> Bool {
        guard let failed = self.platformInputsFailed else { return false }
        guard let current = self.source.clientGrantInputs(), current != failed else { return false }
        self.platformInputsFailed = nil
        return true
    }

    /// When the next attempt is made for a caller that found no usable token: one attempt every
    /// `policy.probeInterval` (after the last one ended), however long (or short) the backoff after a
    /// run of failures is, within `auth.max_refreshes_per_minute`, and never before the time a
    /// token server's `Retry-After` asked for. The state's `retryAt`
    /// moves there, so the scheduler makes the attempt (and `Retry-After` says when) even if no
    /// caller is there at that moment. The backoff stays for proactive refreshes while the
    /// current token still serves, and for an engine nobody asks for a token.
    func probe(_ session: Session?, retryAt: Date, reason: String, now: Date) -> Date {
        if let asked = self.serverRetryAt, asked > now { return retryAt }
        let recent = self.attempts.filter { now.timeIntervalSince($0) < 60 }
        let last = [recent.last, self.lastAttemptEnded].compactMap { $0 }.max()
        var probeAt = max(last.map { $0.addingTimeInterval(self.policy.probeInterval.seconds) } ?? now, now)
        var why = reason
        if recent.count >= self.policy.maxRefreshesPerMinute, let oldest = recent.first,
            oldest.addingTimeInterval(60) > probeAt
        {
            probeAt = oldest.addingTimeInterval(60)
            why =
                "more than \(self.policy.maxRefreshesPerMinute) refresh attempts in a minute (auth.max_refreshes_per_minute)"
        }
        if probeAt != retryAt || why != reason {
            self.transition(to: .waiting(session, retryAt: probeAt, reason: why))
        }
        return probeAt
    }

    /// Whether a 401 to a request for `path` may force a refresh now (``ForcedRefreshGuard``).
    /// The proactive refresh goes on whatever it says.
    func mayForceRefresh(path: String) -> Bool {
        // A 401 does not hurry a try the server (or a refusal) asked bearerd to hold back.
        if case .waiting = self.state, let held = self.serverRetryAt, held > self.clock.now { return false }
        return self.forcedRefresh.mayForce(path: path, now: self.clock.now)
    }

    /// The answer to a request for `path` retried with a fresh token.
    package func freshTokenAnswered(_ token: BearerToken, refused: Bool, path: String) async {
        guard self.forcedRefresh.freshTokenAnswered(path: path, refused: refused, now: self.clock.now) else { return }
        self.logger.log(
            level: self.forcedRefresh.pauses == 1 ? .warning : .debug,
            "the upstream refuses freshly refreshed tokens too on this path; its 401s force no refresh for a while",
            metadata: [
                "path_prefix": "\(ForcedRefreshGuard.key(path))",
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
        while case .refreshing(_, let task) = self.state {
            _ = await task.value
        }
    }
}
