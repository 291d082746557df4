import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The built `bearerd` binary run as a child process, its output captured.
package final class BearerdProcess: Sendable {
    private let process: ChildProcess
    private let output = CapturedOutput()
    /// For `serve` without a `NOTIFY_SOCKET` of the test's own: where its `READY=1` arrives.
    private let notify: (listener: NotifyListener, directory: TemporaryDirectory)?

    /// The `bearerd` executable built next to the test bundle.
    package static var executable: String {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("bearerd").path
    }

    /// Starts `bearerd` with `arguments`; `input`, when given, is its standard input, or
    /// `inputPipe`, written to as the test goes.
    package convenience init(
        _ arguments: [String],
        environment: [String: String] = [:],
        input: String? = nil,
        inputPipe: Pipe? = nil
    ) throws {
        try self.init(
            program: Self.executable,
            arguments,
            environment: environment,
            input: input,
            inputPipe: inputPipe
        )
    }

    /// Starts `program`, which runs `bearerd` in some way of its own (a launcher that passes it
    /// sockets, say).
    package init(
        program: String,
        _ arguments: [String],
        environment: [String: String] = [:],
        input: String? = nil,
        inputPipe: Pipe? = nil
    ) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        var merged = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("BEARERD_") }
        merged.merge(environment) { $1 }
        if merged["NOTIFY_SOCKET"] == nil, arguments.contains("serve") {
            // Reachable by a daemon run as another user (setpriv) too.
            let directory = try TemporaryDirectory()
            chmod(directory.path, 0o755)
            let listener = try NotifyListener(directory: directory.path)
            chmod(listener.path, 0o666)
            merged["NOTIFY_SOCKET"] = listener.path
            self.notify = (listener, directory)
        } else {
            self.notify = nil
        }
        process.environment = merged
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        let stdin = Pipe()
        process.standardInput = inputPipe ?? (input == nil ? FileHandle.nullDevice : stdin)
        let output = self.output
        self.process = process
        try process.run()
        // Started once the child holds the write ends: the parent's copies are closed by run().
        PipeReader.start(stdout.fileHandleForReading) { output.append(stdout: String(decoding: $0, as: UTF8.self)) }
        PipeReader.start(stderr.fileHandleForReading) { output.append(stderr: String(decoding: $0, as: UTF8.self)) }
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try stdin.fileHandleForWriting.close()
        }
    }

    /// A test that fails before it stops the process must not leave it running.
    deinit {
        if self.process.isRunning { self.process.terminate() }
    }

    /// Waits until the daemon says `READY=1` on the notify socket it was given (listening, with
    /// the store loaded and the admin socket up), as systemd would, and until its listening
    /// line has been read; throws if it exits first.
    package func waitUntilReady(_ limit: Duration = .seconds(15)) async throws {
        guard let listener = self.notify?.listener else {
            throw TestClientError("this bearerd has the test's own NOTIFY_SOCKET: watch that one")
        }
        try await waitUntil(limit) {
            listener.messages.contains { $0.hasPrefix("READY=1") } || !self.process.isRunning
        }
        guard listener.messages.contains(where: { $0.hasPrefix("READY=1") }) else {
            throw TestClientError("bearerd exited before READY=1: \(self.stderr)")
        }
        // The datagram can overtake standard error, whose `listening` line names the ports
        // (`proxyPort`): wait until the pipe has caught up with it.
        try await waitUntil(limit) { self.stderr.contains("msg=listening") }
    }

    /// Everything written to standard output so far.
    package var stdout: String { self.output.text.stdout }
    /// Everything written to standard error so far.
    package var stderr: String { self.output.text.stderr }
    /// The port of the proxy's first TCP listener, from its `listening` log line.
    package var proxyPort: Int? { self.number(after: "addresses=127.0.0.1:") }

    /// The number that follows `marker` in standard error (a port a log line names).
    package func number(after marker: String) -> Int? {
        let text = self.stderr
        guard let range = text.range(of: marker) else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    /// The process id.
    package var pid: Int32 { self.process.processIdentifier }

    /// Sends a signal (while it has not been reaped).
    package func signal(_ signal: Int32) {
        self.process.signal(signal)
    }

    /// Whether it has not exited yet.
    package var isRunning: Bool { self.process.isRunning }

    /// Waits for the process to exit (killing it after `limit`) and returns its exit status.
    package func wait(limit: Duration = .seconds(20)) async throws -> Int32 {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while self.process.isRunning {
            if clock.now >= deadline {
                self.process.terminate()
                throw TestClientError("bearerd did not exit within \(limit)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        // Let the pipes drain.
        try await Task.sleep(for: .milliseconds(50))
        return self.process.terminationStatus
    }

    /// Runs `bearerd` to completion.
    package static func run(
        _ arguments: [String],
        environment: [String: String] = [:],
        input: String? = nil
    ) async throws -> (
        status: Int32, stdout: String, stderr: String
    ) {
        let process = try BearerdProcess(arguments, environment: environment, input: input)
        let status = try await process.wait()
        return (status, process.stdout, process.stderr)
    }
}

/// Output collected from the pipes' reader threads.
final class CapturedOutput: Sendable {
    private let state = Mutex((stdout: "", stderr: ""))
    var text: (stdout: String, stderr: String) { self.state.withLock { $0 } }
    func append(stdout text: String) { self.state.withLock { $0.stdout += text } }
    func append(stderr text: String) { self.state.withLock { $0.stderr += text } }
}
