import Logging

/// bearerd's log lines: logfmt (`level=info msg="…" key=value …`), one line per event. The
/// handler of every logger and the access lines write through these, so both read alike.
package enum Logfmt {
    /// `value` as a logfmt value: bare when it can be, else quoted with `"`, `\\`, newlines and
    /// tabs escaped, and every control (``isControl(_:)``) written as `\u{XX}`.
    package static func appendValue(_ value: String, to line: inout String) {
        let needsQuotes =
            value.isEmpty
            || value.utf8.contains { $0 <= 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=") || $0 == 0x7F }
            // Past ASCII, C1 controls and bidirectional marks (looked for only then).
            || value.utf8.contains { $0 >= 0x80 } && value.unicodeScalars.contains(where: Self.isControl)
        guard needsQuotes else {
            line += value
            return
        }
        line += "\""
        for character in value.unicodeScalars {
            switch character {
            case "\"": line += "\\\""
            case "\\": line += "\\\\"
            case "\n": line += "\\n"
            case "\r": line += "\\r"
            case "\t": line += "\\t"
            default:
                // C0, DEL, C1 and the bidirectional and line-separating marks: a log reader's
                // terminal would act on them, or show the line in another order.
                if Self.isControl(character) {
                    line += "\\u{\(String(character.value, radix: 16))}"
                } else {
                    line.unicodeScalars.append(character)
                }
            }
        }
        line += "\""
    }

    /// C0 and C1 controls, DEL, and the bidirectional and line-separating marks: what a terminal
    /// acts on, or shows in another order than written.
    package static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x20, 0x7F...0x9F: true
        case 0x061C, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        case 0x2028, 0x2029: true
        default: false
        }
    }

    /// The syslog priority journald reads from a line's `<N>` prefix.
    package static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}
