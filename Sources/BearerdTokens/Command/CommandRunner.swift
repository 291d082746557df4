/// Runs `auth.command` once: the one I/O seam of ``CommandTokenTransport``.
package protocol CommandRunner: Sendable {
    /// Runs the program to its end, its time or its output bound. Throws a ``CommandRunError``
    /// when it cannot be started at all.
    func run(_ settings: CommandSettings) async throws(CommandRunError) -> CommandResult
}

/// How a run of `auth.command` went.
package struct CommandResult: Sendable, Equatable {
    package enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed, with its process group, at `auth.command_timeout`.
        case timedOut
        /// Killed, with its process group, when its output passed ``CommandSettings/outputLimit``.
        case outputTooLarge
        /// Stopped, with its process group, because bearerd is shutting down.
        case stopped
        /// It ended, but how could not be read (it was reaped by someone else).
        case lost
    }

    package var ending: Ending
    /// At most ``CommandSettings/outputLimit`` bytes (more ends the run as `outputTooLarge`).
    package var stdout: [UInt8]
    /// Its first 4 KiB; the rest is read and dropped so the program never blocks on it.
    package var stderr: [UInt8]

    package init(ending: Ending, stdout: [UInt8], stderr: [UInt8]) {
        self.ending = ending
        self.stdout = stdout
        self.stderr = stderr
    }
}

/// `auth.command` could not be started: the reason in words, naming the program.
package struct CommandRunError: Error, Sendable, Equatable, CustomStringConvertible {
    package var message: String

    package init(_ message: String) { self.message = message }

    package var description: String { self.message }
}
