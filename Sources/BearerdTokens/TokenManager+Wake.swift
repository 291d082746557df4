import Foundation
import Logging

/// Suspend, wake and clock steps: timers on the monotonic clock do not run while a laptop sleeps
/// or a VM is paused, and NTP may step the wall clock. The engine's clock follows the boot clock,
/// so a suspend moves it forward and a wall step does not move it at all. The engine looks at the
/// clocks at each timer, each request that finds no token, and every
/// ``TokenManager/clockLookInterval`` (``ClockWatch``); what it then does is the machine's
/// (``RefreshStateMachine/clocksRead(_:now:)``); here it is said in the log.
extension TokenManager {
    /// Looks at the clocks, and deals with a suspend or a step since the last look.
    package func noticeClockJumps() {
        let reading = self.clocks.read()
        let jumps = self.step { $0.clocksRead(reading, now: self.clock.now) }
        for jump in jumps {
            switch jump {
            case .suspended(let seconds):
                self.logger.notice(
                    "the machine was suspended; judging the token by the clock again",
                    metadata: ["suspended_s": "\(String(format: "%.0f", seconds))"]
                )
            case .wallStepped(let seconds):
                self.logger.notice(
                    "the wall clock was stepped; the refreshes stay on schedule",
                    metadata: ["step_s": "\(String(format: "%.0f", seconds))"]
                )
            }
        }
    }
}
