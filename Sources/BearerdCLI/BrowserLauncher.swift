import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Opens a URL in the person's browser: each command of `$BROWSER` (colon-separated, `%s` for
/// the URL, else the URL last) in turn, then `xdg-open`. The browser never sees a token: only
/// the authorization URL.
enum BrowserLauncher {
    /// `nil` when a browser was started; otherwise why none was.
    static func open(_ url: String, environment: [String: String]) -> String? {
        var commands: [[String]] = []
        if let browser = environment["BROWSER"], !browser.isEmpty {
            for entry in browser.split(separator: ":") {
                let words = entry.split(separator: " ").map(String.init)
                guard !words.isEmpty else { continue }
                let argv = words.contains("%s") ? words.map { $0 == "%s" ? url : $0 } : words + [url]
                commands.append(argv)
            }
        }
        commands.append(["xdg-open", url])
        var problems: [String] = []
        for argv in commands {
            if let problem = Self.start(argv) {
                problems.append("\(argv[0]): \(problem)")
            } else {
                return nil
            }
        }
        return problems.joined(separator: "; ")
    }

    /// Starts `argv`; a command that exits with an error within a second did not open anything.
    private static func start(_ argv: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["--"] + argv
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return "cannot start: \(error)"
        }
        let deadline = ContinuousClock.now + .seconds(1)
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning { return nil }
        // Only a command that could not run means no browser: one that ran and then exited
        // with an error may well have opened the page, and a second opening stops the login.
        return process.terminationStatus == 127 ? "not found" : nil
    }
}
