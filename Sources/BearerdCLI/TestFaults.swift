import Logging
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Faults the systemd tests inject into a debug build, to see what systemd does about them.
/// Compiled out of release builds, where setting the variable only earns a warning.
///
/// `TEST_FAULT_STALL_EVENT_LOOP_AFTER=SECONDS`: that long after the start, one event loop
/// blocks for good, as a bug that never returns would; the watchdog must notice. (Not a
/// `BEARERD_*` name: those are config overrides, and an unknown one is an error.)
enum TestFaults {
    static let stallVariable = "TEST_FAULT_STALL_EVENT_LOOP_AFTER"

    static func arm(environment: [String: String], group: any EventLoopGroup, logger: Logger) {
        guard let text = environment[Self.stallVariable] else { return }
        #if DEBUG
        guard let seconds = Int64(text), (0...3600).contains(seconds) else {
            logger.error("\(Self.stallVariable) must be a number of seconds (0-3600); ignored")
            return
        }
        logger.warning("test fault armed: an event loop stalls for good in \(seconds)s")
        group.next().scheduleTask(in: .seconds(seconds)) {
            logger.warning("test fault: this event loop stalls now")
            while true { sleep(3600) }
        }
        #else
        logger.warning("\(Self.stallVariable) is a test switch of debug builds; this build ignores it")
        #endif
    }
}
