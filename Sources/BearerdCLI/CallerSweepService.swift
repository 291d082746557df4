import BearerdTokens
import ServiceLifecycle

/// Unloads the idle users of a `per_caller` session (`callers.idle_unload`) until graceful
/// shutdown; the token client's service closes every user's store after that.
struct CallerSweepService: Service, CustomStringConvertible {
    let sessions: CallerSessions

    var description: String { "CallerSweepService" }

    func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.sessions.runSweeper()
        }
    }
}
