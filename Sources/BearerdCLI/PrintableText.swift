import BearerdLogging

/// Text a token server chose (a `sub`, a `scope`, a device `user_code`, an error description) as
/// it may reach a terminal or systemd's `STATUS=` line: only printable characters. C0 and C1
/// controls (escape sequences that move the cursor or retitle the window), DEL, newlines and
/// bidirectional overrides (which reorder what a person reads) each become `?`.
enum PrintableText {
    static func of(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: Self.isControl) else { return text }
        return String(String.UnicodeScalarView(text.unicodeScalars.map { Self.isControl($0) ? "?" : $0 }))
    }

    static func isControl(_ scalar: Unicode.Scalar) -> Bool { Logfmt.isControl(scalar) }

    /// The text with each control, DEL, C1 control and bidirectional or line-separating mark
    /// written as `\u{XX}`: for lines that quote a config's values back (`check-config`), where
    /// the reader should see what is there, not have the terminal act on it.
    static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: Self.isControl) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            if Self.isControl(scalar) {
                escaped += "\\u{\(String(scalar.value, radix: 16))}"
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }
}
