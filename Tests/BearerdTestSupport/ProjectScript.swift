import Foundation

/// The project's own scripts (`scripts/oauth-server`, `scripts/postgres`), as the tests run them.
package enum ProjectScript {
    /// The repository's root.
    package static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }

    /// Runs `script` (a path from the repository's root) with its output in a file: the server it starts daemonizes and may keep
    /// inherited descriptors, so a pipe would never reach its end.
    package static func run(_ script: String, _ arguments: [String]) async throws {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent(
            "project-script-\(UUID().uuidString).log"
        )
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw TestClientError("cannot create \(log.path)")
        }
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = ChildProcess()
        process.executableURL = Self.repository.appendingPathComponent(script)
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(300)
        while process.isRunning {
            guard clock.now < deadline else {
                process.terminate()
                throw TestClientError("\(script) \(arguments.joined(separator: " ")) did not finish")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        guard process.terminationStatus == 0 else {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw TestClientError("\(script) \(arguments.joined(separator: " ")) failed: \(text)")
        }
    }

}
