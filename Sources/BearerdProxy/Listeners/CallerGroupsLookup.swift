import BearerdSockets
import NIOCore
import NIOPosix
import Synchronization

/// Looks a TCP caller's account groups up on NIO's thread pool, never on the event loop (NSS
/// may ask LDAP or SSSD, which may take minutes): at most ``mostPending`` at once, each given up
/// after ``deadline``. A caller whose groups did not come is not in `socket_allow_gids`.
enum CallerGroupsLookup {
    static let mostPending = 16
    static let deadline: TimeAmount = .seconds(2)
    private static let pending = Mutex(0)

    /// Completes on `eventLoop` once the groups are in ``AccountGroups``' cache, or given up.
    static func lookUp(_ uid: UInt32, on eventLoop: any EventLoop) -> EventLoopFuture<Void> {
        let admitted = Self.pending.withLock { count in
            guard count < Self.mostPending else { return false }
            count += 1
            return true
        }
        guard admitted else { return eventLoop.makeSucceededVoidFuture() }
        let promise = eventLoop.makePromise(of: Void.self)
        // Both ends run on `eventLoop`: whichever comes first completes the promise.
        let done = NIOLoopBoundBox(false, eventLoop: eventLoop)
        let finish: @Sendable () -> Void = {
            guard !done.value else { return }
            done.value = true
            promise.succeed()
        }
        let timeout = eventLoop.scheduleTask(in: Self.deadline) { finish() }
        NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { AccountGroups.shared.lookUp(uid) }
            .whenComplete { _ in
                Self.pending.withLock { $0 -= 1 }
                timeout.cancel()
                finish()
            }
        return promise.futureResult
    }
}
