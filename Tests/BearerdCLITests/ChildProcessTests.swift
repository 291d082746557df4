import BearerdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The tests' own spawner (Foundation's `Process.run()` can crash a process holding many
/// descriptors): what a child gets, and how its end reads.
@Suite("The tests' child processes")
struct ChildProcessTests {
    @Test func aChildHoldsOnlyItsThreeStreamsAndIgnoresNoSignal() throws {
        // A descriptor of this process, not close-on-exec, and SIGPIPE ignored here (as NIO
        // does): the child must get neither.
        let inherited = dup(2)
        defer { close(inherited) }
        // Left ignored: NIO ignores it once per process, and a test that put the default back
        // after NIO's first socket would let a write to a gone peer kill the test process.
        signal(SIGPIPE, SIG_IGN)
        // ls's own descriptors: the three streams and the directory it reads (3).
        #expect(try Self.output(of: "exec ls /proc/self/fd").split(separator: "\n") == ["0", "1", "2", "3"])
        // No signal of 1 to 31 ignored (32 and 33 are glibc's own, which it sets up itself).
        let line = try Self.output(of: "exec grep SigIgn /proc/self/status")
        let ignored = UInt64(line.dropFirst("SigIgn:".count).trimmingCharacters(in: .whitespacesAndNewlines), radix: 16)
        #expect(ignored.map { $0 & 0x7FFF_FFFF } == 0, "\(line)")
    }

    /// What `sh -c script` prints; this process's copy of the pipe's write end was closed by
    /// `run()`, or the read would never reach its end.
    static func output(of script: String) throws -> String {
        let output = Pipe()
        let child = ChildProcess()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", script]
        child.standardOutput = output
        child.standardInput = FileHandle.nullDevice
        try child.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0)
        return text
    }

    @Test func anExitCodeAndASignalReadAsFoundationReadsThem() throws {
        let exits = ChildProcess()
        exits.executableURL = URL(fileURLWithPath: "/bin/sh")
        exits.arguments = ["-c", "exit 78"]
        try exits.run()
        exits.waitUntilExit()
        #expect(!exits.isRunning && exits.terminationStatus == 78)

        let sleeper = ChildProcess()
        sleeper.executableURL = URL(fileURLWithPath: "/bin/sleep")
        sleeper.arguments = ["30"]
        try sleeper.run()
        #expect(sleeper.isRunning && sleeper.processIdentifier > 0)
        sleeper.terminate()
        sleeper.waitUntilExit()
        #expect(sleeper.terminationStatus == SIGTERM)

        let missing = ChildProcess()
        missing.executableURL = URL(fileURLWithPath: "/nonexistent/program")
        #expect(throws: (any Error).self) { try missing.run() }
    }
}
