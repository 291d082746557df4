import BearerdLogging
import Foundation
import Logging

/// Writes one logfmt line per event to standard error: `level=info msg="…" key=value …`.
///
/// Under systemd (`JOURNAL_STREAM` set) each line starts with its syslog priority (`<6>`), so
/// journald records the level, and the timestamp is left to journald.
package struct LogfmtLogHandler: LogHandler {
    package var metadata: Logger.Metadata = [:]
    private let label: String
    private let journald: Bool
    private let level: LogLevelSetting

    /// A handler for `label` at `level`.
    package init(label: String, level: Logger.Level, journald: Bool) {
        self.init(label: label, level: LogLevelSetting(level), journald: journald)
    }

    /// A handler whose level follows `level`, which a reload changes for every logger at once.
    package init(label: String, level: LogLevelSetting, journald: Bool) {
        self.label = label
        self.level = level
        self.journald = journald
    }

    package var logLevel: Logger.Level {
        get { self.level.value }
        set { self.level.value = newValue }
    }

    package subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { self.metadata[key] }
        set { self.metadata[key] = newValue }
    }

    package func log(event: LogEvent) {
        var line = ""
        line.reserveCapacity(160)
        if self.journald {
            line += "<\(Self.priority(event.level))>"
        } else {
            line += "ts=\(Self.timestamp()) "
        }
        line += "level=\(event.level.rawValue) msg="
        Self.appendValue(event.message.description, to: &line)
        let merged = event.metadata.map { self.metadata.merging($0) { $1 } } ?? self.metadata
        for key in merged.keys.sorted() {
            line += " \(key)="
            Self.appendValue(merged[key]!.description, to: &line)
        }
        StandardError.emit(line)
    }

    static func appendValue(_ value: String, to line: inout String) {
        Logfmt.appendValue(value, to: &line)
    }

    static func timestamp() -> String { Logfmt.timestamp() }

    static func timestamp(milliseconds: Int) -> String { Logfmt.timestamp(milliseconds: milliseconds) }

    private static func priority(_ level: Logger.Level) -> Int { Logfmt.priority(level) }
}
