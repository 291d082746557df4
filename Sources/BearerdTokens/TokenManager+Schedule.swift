import Foundation

extension TokenManager {
    /// Runs the proactive refresh timer until the task is cancelled: sleeps until the next
    /// refresh or retry is due, or until the state changes, then looks again.
    public func runScheduler() async {
        while !Task.isCancelled {
            let (deadline, generation) = self.schedule()
            let clock = self.clock
            await withTaskGroup(of: Void.self) { group in
                if let deadline { group.addTask { try? await clock.sleep(until: deadline) } }
                group.addTask { await self.waitForChange(since: generation) }
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
        let due: Date? =
            switch self.state {
            case .ready(let session): session.refreshAt
            case .waiting(_, let retryAt, _): retryAt
            case .refreshing: nil
            case .loggedOut: self.source.hasClientGrant ? self.clock.now : nil
            }
        guard self.storeBehind else { return (due, self.generation) }
        let retrySave = self.clock.now.addingTimeInterval(Self.saveRetryInterval)
        return (min(due ?? retrySave, retrySave), self.generation)
    }

    /// Refreshes if a refresh or a retry is due.
    func timerFired() async {
        self.writeStore()
        let now = self.clock.now
        switch self.state {
        case .ready(let session) where now >= session.refreshAt:
            await self.refresh(reason: "proactive")
        case .waiting(_, let retryAt, _) where now >= retryAt:
            await self.refresh(reason: "retry")
        case .loggedOut where self.source.hasClientGrant:
            await self.refresh(reason: "client_token")
        default:
            break
        }
    }

    /// Returns once the state changed after `generation`, or when the task is cancelled.
    func waitForChange(since generation: Int) async {
        guard self.generation == generation else { return }
        let id = self.nextWaiterID
        self.nextWaiterID += 1
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                if Task.isCancelled {
                    continuation.resume()
                } else {
                    self.changeWaiters[id] = continuation
                }
            }
        } onCancel: {
            Task { await self.cancelWaiter(id) }
        }
    }

    private func cancelWaiter(_ id: Int) {
        self.changeWaiters.removeValue(forKey: id)?.resume()
    }
}
