import Logging
import Synchronization

/// The log level every bearerd logger reads, so that `log.level` changes on reload. Read on
/// every log call (the access log's included), so it is one atomic load.
package final class LogLevelSetting: Sendable {
    private static let levels = Logger.Level.allCases
    private let index: Atomic<Int>

    package init(_ level: Logger.Level) {
        self.index = Atomic(Self.levels.firstIndex(of: level) ?? 0)
    }

    package var value: Logger.Level {
        get { Self.levels[self.index.load(ordering: .relaxed)] }
        set { self.index.store(Self.levels.firstIndex(of: newValue) ?? 0, ordering: .relaxed) }
    }
}
