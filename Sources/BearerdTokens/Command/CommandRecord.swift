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

    /// At most 200 characters of the first non-empty line of `bytes`, printable ASCII and
    /// UTF-8 letters only (a terminal escape or a forged log field cannot get through).
    package static func firstLine(_ bytes: some Collection<UInt8>) -> String? {
        let text = String(decoding: bytes.prefix(4096), as: UTF8.self)
        guard
            let line = text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first(where: {
                !$0.allSatisfy(\.isWhitespace)
            })
        else { return nil }
        var shown = ""
        for scalar in line.unicodeScalars.prefix(200) {
            let control = scalar.value < 0x20 || (0x7F..<0xA0).contains(scalar.value)
            shown.unicodeScalars.append(control ? "?" : scalar)
        }
        return shown.trimmingCharacters(in: .whitespaces)
    }
}
