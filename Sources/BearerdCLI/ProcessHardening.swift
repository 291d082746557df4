import CBearerdSystem

#if canImport(Glibc)
import Glibc
#endif

/// What every bearerd process does first: it holds refresh tokens, client secrets and the store
/// key in memory, so a crash must not write them to disk and other processes of the same user
/// must not read its memory.
package enum ProcessHardening {
    /// No core file (`RLIMIT_CORE` 0) and not dumpable (`PR_SET_DUMPABLE` 0: no core through a
    /// pipe handler either, no ptrace or /proc/PID/mem by the same user).
    package static func apply() {
        // Only when it is not 0 already (systemd's LimitCORE=0): a unit may forbid setrlimit.
        var current = rlimit()
        if getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &current) != 0 || current.rlim_max != 0 {
            var none = rlimit(rlim_cur: 0, rlim_max: 0)
            _ = setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &none)
        }
        _ = bearerd_set_dumpable(0)
    }
}
