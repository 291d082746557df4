import CBearerdSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A child process started with posix_spawn(3): the part of Foundation's `Process` the tests use,
/// without its crash.
///
/// swift-corelibs-foundation's `Process.run()` (6.3) scans /proc/self/fd copying 256 bytes of
/// each directory entry, past the end of glibc's buffer for the last ones
/// (swiftlang/swift-corelibs-foundation#5472); a test process with many descriptors open died in
/// it with SIGSEGV during a full run. Here the child closes every descriptor above 2 with
/// `posix_spawn_file_actions_addclosefrom_np`, gets default signal handling and an empty signal
/// mask (NIO ignores SIGPIPE in the test process), and is reaped by `waitpid` on this object's
/// pid only.
package final class ChildProcess: @unchecked Sendable {
    package var executableURL: URL?
    package var arguments: [String] = []
    /// Its environment; `nil`: this process's.
    package var environment: [String: String]?
    /// Each a `FileHandle` (`FileHandle.nullDevice` for /dev/null), a `Pipe` (the child gets the
    /// end it needs, and this process's copy of that end is closed once it runs), or `nil`: this
    /// process's own.
    package var standardInput: Any?
    package var standardOutput: Any?
    package var standardError: Any?

    private struct State {
        var pid: pid_t = 0
        var status: Int32?
    }
    private let state = Mutex(State())

    package init() {}

    /// A child nobody waited for is reaped by a thread of its own once it exits, so that it
    /// does not stay a zombie (which `kill(pid, 0)` would still find) for the rest of the run.
    deinit {
        let pid = self.state.withLock { $0.status == nil ? $0.pid : 0 }
        guard pid > 0 else { return }
        Thread.detachNewThread {
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        }
    }

    /// Starts it; throws when it cannot be started (no such program, not executable).
    package func run() throws {
        guard let path = self.executableURL?.path else { throw TestClientError("ChildProcess: no executableURL") }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var closeAfter: [FileHandle] = []
        var added: [Int32] = []
        for (target, stream, input) in [
            (Int32(0), self.standardInput, true), (1, self.standardOutput, false), (2, self.standardError, false),
        ] {
            switch stream {
            case let handle as FileHandle where handle === FileHandle.nullDevice:
                added.append(
                    posix_spawn_file_actions_addopen(&actions, target, "/dev/null", input ? O_RDONLY : O_WRONLY, 0)
                )
            case let handle as FileHandle:
                added.append(posix_spawn_file_actions_adddup2(&actions, handle.fileDescriptor, target))
            case let pipe as Pipe:
                let end = input ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                added.append(posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target))
                closeAfter.append(end)
            case nil:
                break
            default:
                throw TestClientError("ChildProcess: a standard stream is a FileHandle, a Pipe or nil")
            }
        }
        added.append(posix_spawn_file_actions_addclosefrom_np(&actions, 3))
        // A closed handle (descriptor -1) fails here, instead of leaving the child this process's
        // own stream.
        if let failed = added.first(where: { $0 != 0 }) {
            throw TestClientError(
                "ChildProcess: a standard stream cannot be given: \(String(cString: strerror(failed)))"
            )
        }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        bearerd_spawnattr_default_signals(&attributes)

        let variables = (self.environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let code = Self.withCStrings([path] + self.arguments) { argv in
            Self.withCStrings(variables) { envp in posix_spawn(&pid, path, &actions, &attributes, argv, envp) }
        }
        guard code == 0 else {
            throw TestClientError("cannot run \(path): \(String(cString: strerror(code)))")
        }
        self.state.withLock { $0.pid = pid }
        // As Foundation's Process: the ends the child holds now are closed here, so that a reader
        // sees the end of its output when the child exits.
        for end in closeAfter { try? end.close() }
    }

    /// Its pid (0 before `run()`).
    package var processIdentifier: Int32 { self.state.withLock { $0.pid } }

    /// Whether it has been started and not yet reaped.
    package var isRunning: Bool {
        self.state.withLock { state in
            guard state.pid > 0, state.status == nil else { return false }
            var status: Int32 = 0
            let reaped = waitpid(state.pid, &status, WNOHANG)
            if reaped == state.pid {
                state.status = status
                return false
            }
            if reaped < 0 && errno == ECHILD {
                // Reaped by someone else: its status is lost, and must not read as success.
                state.status = 255 << 8
                return false
            }
            return reaped == 0 || (reaped < 0 && errno == EINTR)
        }
    }

    /// Its exit status, or the signal that ended it (as Foundation's `Process`); 0 while it runs.
    package var terminationStatus: Int32 {
        guard let status = self.state.withLock({ $0.status }) else { return 0 }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : signal
    }

    /// Blocks this thread until it has exited.
    package func waitUntilExit() {
        while self.isRunning { usleep(2_000) }
    }

    /// SIGTERM, as Foundation's `terminate()`.
    package func terminate() { self.signal(SIGTERM) }

    /// SIGINT.
    package func interrupt() { self.signal(SIGINT) }

    /// Sends `signal` while the child has not been reaped: never to a pid the system may have
    /// given to another process since.
    package func signal(_ signal: Int32) {
        self.state.withLock { state in
            if state.pid > 0 && state.status == nil { kill(state.pid, signal) }
        }
    }

    private static func withCStrings<Result>(
        _ strings: [String],
        _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> Result
    ) -> Result {
        let pointers = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
