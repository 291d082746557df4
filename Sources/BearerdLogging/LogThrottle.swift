import Logging
import NIOCore

/// Which lines of a repeated event are written and which are only counted: the first of a kind
/// at once, then at most one summary of the kind per ``window`` while it keeps happening.
///
/// An outside party can make bearerd fail at request rate (a token server down, an upstream
/// refusing connections, clients over a limit); one warning per failure made journald drop
/// bearerd's other messages (issue 34). A value with no clock of its own: every call says what
/// time it is (`eventLoop.now`), so a test drives it with an `EmbeddedEventLoop`.
/// ``ThrottledLogger`` holds one under a lock and writes the lines it decides on.
package struct LogThrottle: Sendable {
    /// How long a kind stays quiet after a line of it: at most one line per kind per window, so
    /// steady failure of one kind writes one line every 5 s at any request rate.
    package static let window = TimeAmount.seconds(5)
    /// Kinds tracked at once; beyond this (a caller keying by something unbounded, never meant
    /// to happen) occurrences are counted under ``overflowKind``, so the table stays bounded.
    package static let maxKinds = 64
    package static let overflowKind = "other"

    /// The occurrences of a kind since its last line, written as one line.
    package struct Summary: Sendable, Equatable {
        package var kind: String
        package var level: Logger.Level
        package var message: String
        package var count: Int
        package var firstSeen: NIODeadline
        package var lastSeen: NIODeadline
    }

    /// What to do with one occurrence.
    package struct Verdict: Sendable, Equatable {
        /// Write this occurrence at its level: it is the first of its kind for a window.
        /// Otherwise it was counted, for a summary, and its detail goes at debug.
        package var logNow: Bool
        /// The kind's summary that came due with this occurrence, to write before it.
        package var summary: Summary?
    }

    private struct Entry: Sendable {
        var level: Logger.Level
        var message: String
        /// Until then occurrences are counted, not written.
        var quietUntil: NIODeadline
        var count = 0
        var firstSeen: NIODeadline?
        var lastSeen: NIODeadline?
    }

    private var entries: [String: Entry] = [:]
    package let window: TimeAmount

    package init(window: TimeAmount = Self.window) {
        self.window = window
    }

    /// One occurrence of `kind` at `now`; `level` and `message` are those of its lines.
    package mutating func record(_ kind: String, level: Logger.Level, message: String, now: NIODeadline) -> Verdict {
        let kind = self.entries[kind] != nil || self.entries.count < Self.maxKinds ? kind : Self.overflowKind
        let summary = self.close(kind, now: now)
        guard var entry = self.entries[kind] else {
            self.entries[kind] = Entry(level: level, message: message, quietUntil: now + self.window)
            return Verdict(logNow: true, summary: summary)
        }
        entry.count += 1
        if entry.firstSeen == nil { entry.firstSeen = now }
        entry.lastSeen = now
        self.entries[kind] = entry
        return Verdict(logNow: false, summary: summary)
    }

    /// The summaries of the kinds whose window has ended by `now`.
    package mutating func due(now: NIODeadline) -> [Summary] {
        self.entries.keys.sorted().compactMap { self.close($0, now: now) }
    }

    /// Every pending summary, window ended or not (at shutdown); forgets every kind.
    package mutating func drain() -> [Summary] {
        let summaries = self.entries.keys.sorted().compactMap { kind in
            self.entries[kind].flatMap { entry in Self.summary(kind, entry) }
        }
        self.entries.removeAll()
        return summaries
    }

    /// When the next summary comes due; `nil` while nothing is counted.
    package var nextDue: NIODeadline? {
        self.entries.values.lazy.filter { $0.count > 0 }.map(\.quietUntil).min()
    }

    /// Ends the kind's window if it is over: a summary of what it counted, after which the kind
    /// stays quiet for another window; or, with nothing counted, the kind is forgotten and its
    /// next occurrence is written at once.
    private mutating func close(_ kind: String, now: NIODeadline) -> Summary? {
        guard let entry = self.entries[kind], entry.quietUntil <= now else { return nil }
        guard let summary = Self.summary(kind, entry) else {
            self.entries[kind] = nil
            return nil
        }
        self.entries[kind] = Entry(level: entry.level, message: entry.message, quietUntil: now + self.window)
        return summary
    }

    private static func summary(_ kind: String, _ entry: Entry) -> Summary? {
        guard entry.count > 0, let first = entry.firstSeen, let last = entry.lastSeen else { return nil }
        return Summary(
            kind: kind,
            level: entry.level,
            message: entry.message,
            count: entry.count,
            firstSeen: first,
            lastSeen: last
        )
    }
}
