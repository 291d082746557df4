import BearerdAuth
import BearerdTokens
import CBearerdSystem
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Runs `auth.command` with posix_spawn, on a thread of its own (a run blocks in poll(2), never
/// an event loop or the cooperative pool):
/// - no shell: `argv` as written, `argv[0]` the absolute path the config check resolved;
/// - bearerd's environment without what is bearerd's alone (`OTEL_*`, which may hold a
///   collector's key, `BEARERD_*`, systemd's `NOTIFY_SOCKET`, `LISTEN_*`, `WATCHDOG_*`,
///   `JOURNAL_STREAM`), with `auth.command_env` on top, in `auth.command_directory`;
/// - standard input /dev/null; no other descriptor of the daemon's (a listener, the store's
///   lock, a token client's connection) is inherited: everything from 3 up is closed;
/// - its own process group, signal mask cleared and every signal at its default (the daemon
///   ignores SIGPIPE; the child must not);
/// - at `auth.command_timeout`, past 64 KiB of output, or at shutdown (``stopAll()``), the
///   whole group gets SIGTERM, then SIGKILL a second later (a shell's `sleep` holding the pipe
///   included); a group that still will not end (a child that changed user, a read stuck in the
///   kernel) is left to a reaper thread, and the run ends anyway;
/// - once the program has exited, output still held open by something it left running is
///   waited for 200 ms, then bearerd stops reading (the program's background helper keeps
///   running: it is not bearerd's to kill).
struct SpawnedCommandRunner: CommandRunner {
    /// The runs in progress, stopped at shutdown so that the engine's last attempt ends within
    /// a second instead of at `auth.command_timeout`.
    private let running = Running()

    final class Running: Sendable {
        let children = Mutex<[ObjectIdentifier: Child]>([:])
    }

    /// Stops every run of this runner in progress (SIGTERM, then SIGKILL a second later).
    func stopAll() {
        for child in self.running.children.withLock({ Array($0.values) }) { child.stop() }
    }

    func run(_ settings: CommandSettings) async throws(CommandRunError) -> CommandResult {
        let child = Child()
        let key = ObjectIdentifier(child)
        self.running.children.withLock { $0[key] = child }
        defer { self.running.children.withLock { _ = $0.removeValue(forKey: key) } }
        let result: Result<CommandResult, CommandRunError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let thread = Thread {
                    continuation.resume(returning: Result { () throws(CommandRunError) in try child.run(settings) })
                    child.reapLeftover()
                }
                thread.name = "bearerd-command"
                thread.start()
            }
        } onCancel: {
            child.stop()
        }
        return try result.get()
    }

    /// The environment a command gets: bearerd's, without its own variables, with `extra` on top.
    static func environment(_ base: [String: String], adding extra: [NameValue]) -> [String] {
        var environment = base.filter { name, _ in
            !(name.hasPrefix("OTEL_") || name.hasPrefix("BEARERD_") || name.hasPrefix("LISTEN_")
                || name.hasPrefix("WATCHDOG_") || name == "NOTIFY_SOCKET" || name == "JOURNAL_STREAM")
        }
        for pair in extra { environment[pair.name] = pair.value }
        return environment.map { "\($0.key)=\($0.value)" }.sorted()
    }

    /// One child process: its pid while it may be signalled (not yet reaped, and its run not
    /// over), under a lock so that a stop never signals a pid the kernel has handed to another
    /// process.
    final class Child: Sendable {
        private struct State {
            var pid: pid_t?
            var stopped = false
            /// The run has returned; the group, if it would not die, is left to `reapLeftover`.
            var abandoned = false
        }

        private let state = Mutex(State())

        /// At shutdown or cancellation: the run loop sends the signals.
        func stop() {
            self.state.withLock { $0.stopped = true }
        }

        private var isStopped: Bool { self.state.withLock { $0.stopped } }

        private func signalGroup(_ signal: Int32) {
            self.state.withLock { state in
                if let pid = state.pid, !state.abandoned { _ = Glibc.kill(-pid, signal) }
            }
        }

        /// The wait status if the child has ended (and is now reaped), `nil` while it runs;
        /// `-1` when it was reaped elsewhere. Never blocks.
        private func reap() -> Int32? {
            self.state.withLock { state -> Int32? in
                guard let pid = state.pid else { return nil }
                var status: Int32 = 0
                var got: pid_t
                repeat { got = waitpid(pid, &status, WNOHANG) } while got < 0 && errno == EINTR
                if got == 0 { return nil }
                state.pid = nil
                return got == pid ? status : -1
            }
        }

        /// After the run returned: a group that did not die is waited for here, blocking, with
        /// no lock held and no signal sent to its pid any more.
        func reapLeftover() {
            let pid = self.state.withLock { state -> pid_t? in
                state.abandoned = true
                return state.pid
            }
            guard let pid else { return }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
            self.state.withLock { $0.pid = nil }
        }

        func run(_ settings: CommandSettings) throws(CommandRunError) -> CommandResult {
            let program = settings.program
            var output: [Int32] = [-1, -1]
            var errors: [Int32] = [-1, -1]
            guard pipe2(&output, O_CLOEXEC) == 0 else { throw Self.failure(program, "cannot make a pipe", errno) }
            guard pipe2(&errors, O_CLOEXEC) == 0 else {
                let code = errno
                close(output[0])
                close(output[1])
                throw Self.failure(program, "cannot make a pipe", code)
            }

            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            // Opened in the child: a failure fails the spawn, never leaves bearerd's stdin.
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, output[1], 1)
            posix_spawn_file_actions_adddup2(&actions, errors[1], 2)
            posix_spawn_file_actions_addclosefrom_np(&actions, 3)
            if let directory = settings.directory { posix_spawn_file_actions_addchdir_np(&actions, directory) }

            var attributes = posix_spawnattr_t()
            posix_spawnattr_init(&attributes)
            defer { posix_spawnattr_destroy(&attributes) }
            posix_spawnattr_setflags(
                &attributes,
                Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
            )
            posix_spawnattr_setpgroup(&attributes, 0)
            bearerd_spawnattr_default_signals(&attributes)

            let arguments = CStrings(settings.argv)
            let variables = CStrings(
                SpawnedCommandRunner.environment(ProcessInfo.processInfo.environment, adding: settings.environment)
            )

            var pid: pid_t = 0
            let spawned = self.state.withLock { state -> Int32 in
                let code =
                    program.contains("/")
                    ? posix_spawn(&pid, program, &actions, &attributes, arguments.pointers, variables.pointers)
                    : posix_spawnp(&pid, program, &actions, &attributes, arguments.pointers, variables.pointers)
                if code == 0 { state.pid = pid }
                return code
            }
            close(output[1])
            close(errors[1])
            guard spawned == 0 else {
                close(output[0])
                close(errors[0])
                throw Self.failure(program, "cannot run it", spawned)
            }
            return self.collect(pid: pid, output: output[0], errors: errors[0], settings: settings)
        }

        private func collect(pid: pid_t, output: Int32, errors: Int32, settings: CommandSettings) -> CommandResult {
            let clock = ContinuousClock()
            let deadline = clock.now + settings.timeout
            let exitWatch = pidfd_open(pid, 0)
            defer { if exitWatch >= 0 { close(exitWatch) } }
            var descriptors = [
                pollfd(fd: output, events: Int16(POLLIN), revents: 0),
                pollfd(fd: errors, events: Int16(POLLIN), revents: 0),
                pollfd(fd: exitWatch, events: Int16(POLLIN), revents: 0),
            ]
            var stdout: [UInt8] = []
            var stderr: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 16 << 10)
            var status: Int32?
            var afterExit: ContinuousClock.Instant?
            var ending: CommandResult.Ending?
            while descriptors[0].fd >= 0 || descriptors[1].fd >= 0 {
                let now = clock.now
                if let afterExit, now >= afterExit { break }
                if status == nil {
                    if now >= deadline {
                        ending = .timedOut
                        break
                    }
                    if self.isStopped {
                        ending = .stopped
                        break
                    }
                }
                // At most 100 ms: a stop is noticed within that (and without a pidfd, the exit).
                let until = afterExit ?? deadline
                let wait = max(.zero, min(until - now, .milliseconds(100)))
                let milliseconds = Int32(wait / .milliseconds(1)) + 1
                let ready = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
                if ready < 0 && errno != EINTR { break }
                for index in 0..<2 where descriptors[index].fd >= 0 && descriptors[index].revents != 0 {
                    let count = buffer.withUnsafeMutableBytes { read(descriptors[index].fd, $0.baseAddress, $0.count) }
                    if count > 0 {
                        if index == 0 {
                            stdout += buffer[0..<count]
                        } else if stderr.count < 4096 {
                            stderr += buffer[0..<min(count, 4096 - stderr.count)]
                        }
                    } else if count == 0 || (errno != EINTR && errno != EAGAIN) {
                        close(descriptors[index].fd)
                        descriptors[index].fd = -1
                    }
                }
                if stdout.count > CommandSettings.outputLimit {
                    ending = .outputTooLarge
                    break
                }
                if status == nil, exitWatch < 0 || descriptors[2].revents != 0, let reaped = self.reap() {
                    status = reaped
                    descriptors[2].fd = -1
                    afterExit = clock.now + .milliseconds(200)
                }
            }
            for index in 0..<2 where descriptors[index].fd >= 0 { close(descriptors[index].fd) }
            if let ending {
                if status == nil { self.end(clock: clock) }
                return CommandResult(ending: ending, stdout: ending == .outputTooLarge ? [] : stdout, stderr: stderr)
            }
            // Both pipes ended: the program has exited, or will; it is waited for until the
            // deadline (or a stop).
            while status == nil {
                if let reaped = self.reap() {
                    status = reaped
                    break
                }
                if clock.now >= deadline || self.isStopped {
                    let ending: CommandResult.Ending = self.isStopped ? .stopped : .timedOut
                    self.end(clock: clock)
                    return CommandResult(ending: ending, stdout: stdout, stderr: stderr)
                }
                usleep(2_000)
            }
            guard let code = status, code >= 0 else {
                return CommandResult(ending: .lost, stdout: stdout, stderr: stderr)
            }
            let signal = code & 0x7F
            let ended: CommandResult.Ending = signal == 0 ? .exited((code >> 8) & 0xFF) : .signalled(signal)
            return CommandResult(ending: ended, stdout: stdout, stderr: stderr)
        }

        /// SIGTERM to the group, SIGKILL a second later, then up to a second for the leader to
        /// be reaped; past that it is `reapLeftover`'s.
        private func end(clock: ContinuousClock) {
            self.signalGroup(SIGTERM)
            let killAt = clock.now + .seconds(1)
            var killed = false
            while self.reap() == nil {
                if !killed && clock.now >= killAt {
                    self.signalGroup(SIGKILL)
                    killed = true
                } else if killed && clock.now >= killAt + .seconds(1) {
                    return
                }
                usleep(5_000)
            }
        }

        private static func failure(_ program: String, _ what: String, _ code: Int32) -> CommandRunError {
            switch code {
            case ENOENT:
                return CommandRunError(
                    "cannot run \(program): no such program (or no auth.command_directory): give its absolute path, or put it in PATH"
                )
            case EACCES:
                return CommandRunError(
                    "cannot run \(program): permission denied: make it executable by bearerd's user, and its directory searchable"
                )
            default:
                return CommandRunError("\(what) \(program): \(String(cString: strerror(code)))")
            }
        }
    }

    /// NUL-terminated copies of strings and the NULL-terminated array execve(2) takes, freed
    /// with the value.
    final class CStrings {
        let pointers: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>
        private let count: Int

        init(_ strings: [String]) {
            self.count = strings.count
            self.pointers = .allocate(capacity: strings.count + 1)
            for (index, string) in strings.enumerated() { self.pointers[index] = strdup(string) }
            self.pointers[strings.count] = nil
        }

        deinit {
            for index in 0..<self.count { free(self.pointers[index]) }
            self.pointers.deallocate()
        }
    }
}
