import Foundation

/// A fresh directory under the system temp dir, removed when the object goes away.
package final class TemporaryDirectory: Sendable {
    /// Its absolute path.
    package let path: String

    /// Creates the directory.
    package init() throws {
        let path = NSTemporaryDirectory() + "bearerd-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        self.path = path
    }

    /// Writes `text` to `name` inside the directory with `mode`.
    @discardableResult
    package func write(_ text: String, to name: String, mode: Int = 0o600) throws -> String {
        let file = self.path + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: file)
        return file
    }

    deinit {
        try? FileManager.default.removeItem(atPath: self.path)
    }
}

/// The resident set size of this process in bytes, from /proc/self/status.
package func residentSetSize() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
        let digits = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        return digits * 1024
    }
    return 0
}
