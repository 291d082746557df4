import Testing

@testable import BearerdCLI

/// What a client, a token server or a config puts into a log value or a `check-config` line
/// reaches a person's terminal: C0 and C1 controls, DEL and the bidirectional and line-separating
/// marks are written out as escapes, never passed to the terminal (which would act on an escape
/// sequence, or show the line in another order).
@Suite("Log and check-config escaping")
struct LogEscapingTests {
    static let hostile: [(String, String)] = [
        ("\u{1B}[2Jwiped", "\\u{1b}[2Jwiped"),
        ("c1\u{9B}31mred", "c1\\u{9b}31mred"),
        ("abc\u{202E}gpj.exe", "abc\\u{202e}gpj.exe"),
        ("isolate\u{2066}x\u{2069}", "isolate\\u{2066}x\\u{2069}"),
        ("line\u{2028}break", "line\\u{2028}break"),
        ("arabic\u{061C}mark", "arabic\\u{61c}mark"),
    ]

    @Test(arguments: hostile)
    func aLogValueEscapesEveryControlAndBidiMark(value: String, escaped: String) {
        var line = ""
        LogfmtLogHandler.appendValue(value, to: &line)
        #expect(line == "\"\(escaped)\"", "\(line.debugDescription)")
        #expect(!line.unicodeScalars.contains(where: PrintableText.isControl))
    }

    @Test(arguments: hostile)
    func checkConfigLinesEscapeThemToo(value: String, escaped: String) {
        #expect(PrintableText.escaped("upstream.url: \(value)") == "upstream.url: \(escaped)")
    }

    @Test func printableTextPassesUnchangedAndUnquoted() {
        var line = ""
        LogfmtLogHandler.appendValue("/café/straße", to: &line)
        #expect(line == "/café/straße")
        #expect(PrintableText.escaped("caf\u{E9} ok") == "caf\u{E9} ok")
    }
}
