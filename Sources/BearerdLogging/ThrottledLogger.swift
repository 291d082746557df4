import Logging
import NIOCore
import Synchronization

/// Writes the lines an outside party can cause at request rate (failed requests, refused
/// connections, stalled peers) through a ``LogThrottle``: the first of a kind at its level,
/// later ones of the kind at debug, and every ``LogThrottle/window`` one summary line
/// (`msg="request failed (repeated)" kind=… count=… first_seen=… last_seen=…`).
///
/// One for the whole proxy, not one per event loop: per loop, the lines would multiply with the
/// number of loops. Its lock is taken only when something fails, never on the happy path. The
/// summary of a burst that stops is written by a task on `eventLoop`, scheduled only while
/// something is counted, so its count shows within a window; ``flush()`` writes the rest at
/// shutdown.
package final class ThrottledLogger: Sendable {
    /// The logger every line goes to.
    package let logger: Logger
    /// Runs the summary task; its `now` is the time of calls that give none.
    private let eventLoop: any EventLoop
    private let state: Mutex<State>

    private struct State: Sendable {
        var throttle: LogThrottle
        /// A summary task is scheduled (it reschedules itself while counts are pending).
        var flushScheduled = false
    }

    /// - Parameters:
    ///   - window: How often a repeated kind is summarised (``LogThrottle/window``).
    package init(logger: Logger, eventLoop: any EventLoop, window: TimeAmount = LogThrottle.window) {
        self.logger = logger
        self.eventLoop = eventLoop
        self.state = Mutex(State(throttle: LogThrottle(window: window)))
    }

    /// Logs one occurrence of `kind`: at `level` if it is the first of its kind in a window,
    /// otherwise at debug, counted for the kind's next summary.
    /// - Parameters:
    ///   - kind: A name from a fixed set in the code (a failure's `error` code), never a value
    ///     from outside: the kinds are what the throttle keeps.
    ///   - message: A fixed text; the summary line is this with " (repeated)".
    ///   - now: The caller's event loop's time (`eventLoop.now` when not given).
    package func log(
        _ level: Logger.Level,
        kind: String,
        _ message: String,
        metadata: @autoclosure () -> Logger.Metadata = [:],
        now: NIODeadline? = nil
    ) {
        let now = now ?? self.eventLoop.now
        let (verdict, schedule) = self.state.withLock { state -> (LogThrottle.Verdict, NIODeadline?) in
            let verdict = state.throttle.record(kind, level: level, message: message, now: now)
            guard !verdict.logNow, !state.flushScheduled, let due = state.throttle.nextDue else {
                return (verdict, nil)
            }
            state.flushScheduled = true
            return (verdict, due)
        }
        if let summary = verdict.summary { self.write(summary, now: now) }
        if verdict.logNow {
            var metadata = metadata()
            metadata["kind"] = .string(kind)
            self.logger.log(level: level, "\(message)", metadata: metadata)
        } else {
            self.logger.debug("\(message)", metadata: metadata().merging(["kind": .string(kind)]) { $1 })
        }
        if let schedule { self.scheduleFlush(at: schedule) }
    }

    /// ``log(_:kind:_:metadata:now:)`` at warning.
    package func warning(
        kind: String,
        _ message: String,
        metadata: @autoclosure () -> Logger.Metadata = [:],
        now: NIODeadline? = nil
    ) {
        self.log(.warning, kind: kind, message, metadata: metadata(), now: now)
    }

    /// ``log(_:kind:_:metadata:now:)`` at error.
    package func error(
        kind: String,
        _ message: String,
        metadata: @autoclosure () -> Logger.Metadata = [:],
        now: NIODeadline? = nil
    ) {
        self.log(.error, kind: kind, message, metadata: metadata(), now: now)
    }

    /// Writes every pending summary now, window ended or not (at shutdown).
    package func flush() {
        let now = self.eventLoop.now
        let summaries = self.state.withLock { $0.throttle.drain() }
        for summary in summaries { self.write(summary, now: now) }
    }

    private func scheduleFlush(at deadline: NIODeadline) {
        self.eventLoop.scheduleTask(deadline: deadline) { self.flushDue() }
    }

    /// The scheduled task: the summaries whose window ended, then the task again if more is
    /// counted.
    private func flushDue() {
        let now = self.eventLoop.now
        let (summaries, next) = self.state.withLock { state -> ([LogThrottle.Summary], NIODeadline?) in
            let summaries = state.throttle.due(now: now)
            let next = state.throttle.nextDue
            state.flushScheduled = next != nil
            return (summaries, next)
        }
        for summary in summaries { self.write(summary, now: now) }
        if let next { self.scheduleFlush(at: next) }
    }

    private func write(_ summary: LogThrottle.Summary, now: NIODeadline) {
        self.logger.log(
            level: summary.level,
            "\(summary.message) (repeated)",
            metadata: [
                "kind": .string(summary.kind),
                "count": .stringConvertible(summary.count),
                "first_seen": .string(Self.ago(now - summary.firstSeen)),
                "last_seen": .string(Self.ago(now - summary.lastSeen)),
            ]
        )
    }

    /// `4.25s ago`: how long before the summary line, to the hundredth of a second.
    static func ago(_ amount: TimeAmount) -> String {
        let hundredths = max(0, amount.nanoseconds) / 10_000_000
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)s ago"
    }
}
