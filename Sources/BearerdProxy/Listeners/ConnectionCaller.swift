import BearerdSockets
import Metrics

/// The local caller of one client connection, found once when it is accepted: what the access
/// log names (`caller_uid`, `caller_pid`, `caller_exe`) and the counter its requests go to.
struct ConnectionCaller: Sendable {
    let uid: UInt32
    let pid: Int32?
    /// `/proc/PID/exe`, read once, when the pid is known and the link may be read.
    let executable: String?
    let requests: Counter

    /// `readExecutable`: the access line is written (the link is read for nothing otherwise).
    init(_ caller: Caller, metrics: ProxyMetrics, readExecutable: Bool) {
        self.uid = caller.uid
        self.pid = caller.pid
        self.executable = readExecutable ? caller.executable : nil
        self.requests = metrics.callerRequests(uid: caller.uid)
    }
}
