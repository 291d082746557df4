import BearerdLogging
import Logging

/// One access line's fields, as the exchange ended: written as logfmt by ``AccessLog`` (the
/// daemon's), or through the connection's logger where there is none (a test's).
struct AccessRecord {
    var method: String
    var path: String
    var status: Int
    var bytesIn: Int
    var bytesOut: Int
    /// In tenths of a millisecond.
    var duration: Int64
    var upstream: Int64?
    var callerUID: UInt32?
    var callerPID: Int32?
    var callerExecutable: String?
    var callerExecutableAge: Int64?
    var traceID: String?
    var outcome: String?
    var retried: String?
    var session: String?

    /// The fields as logger metadata.
    var metadata: Logger.Metadata {
        var metadata: Logger.Metadata = [
            "method": .string(self.method),
            "path": .string(self.path),
            "status": .stringConvertible(self.status),
            "bytes_in": .stringConvertible(self.bytesIn),
            "bytes_out": .stringConvertible(self.bytesOut),
            "duration_ms": .string(Self.milliseconds(self.duration)),
        ]
        if let upstream { metadata["upstream_ms"] = .string(Self.milliseconds(upstream)) }
        if let callerUID { metadata["caller_uid"] = .stringConvertible(callerUID) }
        if let callerPID { metadata["caller_pid"] = .stringConvertible(callerPID) }
        if let callerExecutable { metadata["caller_exe"] = .string(callerExecutable) }
        if let callerExecutableAge { metadata["caller_exe_age_s"] = .stringConvertible(callerExecutableAge) }
        if let traceID { metadata["trace_id"] = .string(traceID) }
        if let outcome { metadata["outcome"] = .string(outcome) }
        if let retried { metadata["retried"] = .string(retried) }
        if let session { metadata["session"] = .string(session) }
        return metadata
    }

    /// The line the log handler writes for ``metadata`` (keys in the same sorted order, values
    /// escaped alike), without its trailing newline; `prefix` is `<6>` for journald or
    /// `ts=… ` otherwise. Formatted without a dictionary or a string per value.
    func logfmt(prefix: String) -> String {
        var line = prefix
        line.reserveCapacity(prefix.utf8.count + 200 + self.path.utf8.count)
        line += "level=info msg=request bytes_in="
        line += String(self.bytesIn)
        line += " bytes_out="
        line += String(self.bytesOut)
        if let callerExecutable {
            line += " caller_exe="
            Logfmt.appendValue(callerExecutable, to: &line)
        }
        if let callerExecutableAge {
            line += " caller_exe_age_s="
            line += String(callerExecutableAge)
        }
        if let callerPID {
            line += " caller_pid="
            line += String(callerPID)
        }
        if let callerUID {
            line += " caller_uid="
            line += String(callerUID)
        }
        line += " duration_ms="
        Self.appendMilliseconds(self.duration, to: &line)
        line += " method="
        Logfmt.appendValue(self.method, to: &line)
        if let outcome {
            line += " outcome="
            Logfmt.appendValue(outcome, to: &line)
        }
        line += " path="
        Logfmt.appendValue(self.path, to: &line)
        if let retried {
            line += " retried="
            Logfmt.appendValue(retried, to: &line)
        }
        if let session {
            line += " session="
            Logfmt.appendValue(session, to: &line)
        }
        line += " status="
        line += String(self.status)
        if let traceID {
            line += " trace_id="
            Logfmt.appendValue(traceID, to: &line)
        }
        if let upstream {
            line += " upstream_ms="
            Self.appendMilliseconds(upstream, to: &line)
        }
        return line
    }

    static func milliseconds(_ tenths: Int64) -> String {
        var text = ""
        Self.appendMilliseconds(tenths, to: &text)
        return text
    }

    private static func appendMilliseconds(_ tenths: Int64, to line: inout String) {
        line += String(tenths / 10)
        line += "."
        line += String(tenths % 10)
    }
}
