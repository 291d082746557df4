import Logging

/// What postgres-nio's pool says in the background, at warning and above only: while the
/// database is down it notes every failed connection attempt (several a second), and bearerd's
/// own lines already say what fails and what it does about it. The level is not set on bearerd's
/// handler, whose level every logger shares (reload sets it).
struct PoolLogHandler: LogHandler {
    var base: any LogHandler

    var metadata: Logger.Metadata {
        get { self.base.metadata }
        set { self.base.metadata = newValue }
    }

    var logLevel: Logger.Level {
        get { max(self.base.logLevel, .warning) }
        set {}
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.base[metadataKey: key] }
        set { self.base[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        guard event.level >= self.logLevel else { return }
        self.base.log(event: event)
    }
}
