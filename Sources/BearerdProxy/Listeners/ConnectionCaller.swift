import BearerdSockets
import Metrics
import NIOCore

/// The local caller of one client connection, found once when it is accepted: what the access
/// log names (`caller_uid`, `caller_pid`, `caller_exe`) and the counter its requests go to.
struct ConnectionCaller: Sendable {
    let uid: UInt32
    let pid: Int32?
    /// `/proc/PID/exe`, read once, when the pid is known and the link may be read.
    let executable: String?
    /// When `executable` was read (the connection's accept): later, the process may run another
    /// program (an `exec`), or have exited and its pid gone to another process.
    let readAt: NIODeadline
    let requests: Counter

    /// `readExecutable`: the access line is written (the link is read for nothing otherwise).
    init(_ caller: Caller, metrics: ProxyMetrics, readExecutable: Bool, now: NIODeadline) {
        self.uid = caller.uid
        self.pid = caller.pid
        self.executable = readExecutable ? caller.executable : nil
        self.readAt = now
        self.requests = metrics.callerRequests(uid: caller.uid)
    }

    /// Whole seconds since `executable` was read, once it is a second or more: the access line
    /// says then that the program it names may no longer be the caller's.
    func executableAge(now: NIODeadline) -> Int64? {
        let age = (now - self.readAt).nanoseconds / 1_000_000_000
        return age >= 1 ? age : nil
    }
}
