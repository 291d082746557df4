import Foundation
import Synchronization

/// The last run of `auth.command`, for `status` and the log: when, how it ended, and the first
/// line of its standard error (bounded, control characters taken out). Its standard output is
/// never kept here.
package final class CommandRecord: Sendable {
    package struct Run: Sendable, Equatable {
        package var at: Date
        /// `exit 0`, `exit 3`, `killed by signal 9`, `killed after auth.command_timeout (30s)`.
        package var ended: String
        package var stderr: String?

        package init(at: Date, ended: String, stderr: String?) {
            self.at = at
            self.ended = ended
            self.stderr = stderr
        }
    }

    private let last = Mutex<Run?>(nil)

    package init() {}

    package var lastRun: Run? { self.last.withLock { $0 } }

    package func record(_ run: Run) { self.last.withLock { $0 = run } }

    /// At most 200 characters of the first non-empty line of `bytes`: printable ASCII only
    /// (anything else, a terminal escape or a bidi override included, shown as `?`), and every
    /// run of 20 or more token characters shown as `…`, as the token server's
    /// `error_description` is: a helper that echoes a token on standard error does not put it in
    /// a log line or `status`.
    package static func firstLine(_ bytes: some Collection<UInt8>) -> String? {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        let lines = text.unicodeScalars.split(whereSeparator: { $0 == "\n" || $0 == "\r" })
        guard let line = lines.first(where: { !$0.allSatisfy { $0 == " " || $0 == "\t" } }) else { return nil }
        let shown = TokenResponseClassifier.redacted(String(String.UnicodeScalarView(line)), limit: 200)
        return shown.trimmingCharacters(in: .whitespaces)
    }
}
