import Logging
import Synchronization

/// The log level every bearerd logger reads, so that `log.level` changes on reload.
public final class LogLevelSetting: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) {
        self.level = Mutex(level)
    }

    public var value: Logger.Level {
        get { self.level.withLock { $0 } }
        set { self.level.withLock { $0 = newValue } }
    }
}
