import Foundation
import Synchronization

/// A psql session a test holds open against a ``PostgresServer`` (`scripts/postgres session`), as
/// another client of the database would: what it locks stays locked until ``end()``.
package final class PostgresSession: Sendable {
    private let process: ChildProcess
    private let input: FileHandle
    private let output = Output()

    /// Connects as `role` (the superuser by default; any role that may log in).
    package init(_ server: PostgresServer, role: String = "postgres") throws {
        let process = ChildProcess()
        process.executableURL = ProjectScript.repository.appendingPathComponent("scripts/postgres")
        process.arguments = [
            "session", "--dir", server.directory.path, "--port", "\(server.port)", "--user", role,
        ]
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = stdout
        try process.run()
        self.process = process
        self.input = stdin.fileHandleForWriting
        let output = self.output
        PipeReader.start(stdout.fileHandleForReading) { bytes in
            output.text.withLock { $0 += String(decoding: bytes, as: UTF8.self) }
        }
    }

    /// What the session has printed so far (results and errors).
    package var text: String { self.output.text.withLock { $0 } }

    /// Sends `sql`, then waits (at most `limit`) until the session prints `marker`, which a
    /// statement after `sql` prints once everything before it has run.
    package func run(_ sql: String, until marker: String, within limit: Duration = .seconds(10)) async throws {
        try self.input.write(contentsOf: Data((sql + "\nSELECT '\(marker)';\n").utf8))
        try await waitUntil(limit) { self.text.contains(marker) }
    }

    /// Ends the session (what it held is released): psql quits when it reads `\q`, without
    /// waiting for the end of its input, which a process started meanwhile by another test may
    /// have inherited. Never blocks; ``ended()`` waits for it.
    package func end() {
        try? self.input.write(contentsOf: Data("\\q\n".utf8))
        try? self.input.close()
    }

    /// Ends the session and waits (at most 10 s, without blocking a thread) until psql is gone.
    package func ended() async throws {
        self.end()
        try await waitUntil(.seconds(10)) { !self.process.isRunning }
    }
}

/// What a session printed, filled by its reader thread.
private final class Output: Sendable {
    let text = Mutex("")
}
