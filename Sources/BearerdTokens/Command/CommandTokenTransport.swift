import Foundation

/// The "token endpoint" of ``CommandSource``: each request runs `auth.command` once. Exit 0 with
/// output in a form bearerd reads is a 200 whose body is that output; anything else (a non-zero
/// exit, a signal, `auth.command_timeout`, more than 64 KiB, output it cannot read, a program
/// it cannot start) is a token server that could not be asked: the engine keeps the current
/// token and tries again with its backoff. The first line of standard error, bounded and
/// escaped, goes into the reason (and so into the log and `status`); standard output never does.
package struct CommandTokenTransport: TokenTransport {
    let settings: CommandSettings
    let runner: any CommandRunner
    let record: CommandRecord
    let clock: any TokenClock

    package init(settings: CommandSettings, runner: any CommandRunner, record: CommandRecord, clock: any TokenClock) {
        self.settings = settings
        self.runner = runner
        self.record = record
        self.clock = clock
    }

    package func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        let program = self.settings.program
        let result: CommandResult
        do {
            result = try await self.runner.run(self.settings)
        } catch {
            self.record.record(.init(at: self.clock.wallNow, ended: "not started", stderr: nil))
            throw TokenEngineError.unreachable("auth.command: \(error.message)")
        }
        let stderr = CommandRecord.firstLine(result.stderr)
        let ended: String
        switch result.ending {
        case .exited(let code): ended = "exit \(code)"
        case .signalled(let signal): ended = "killed by signal \(signal)"
        case .timedOut: ended = "killed after auth.command_timeout (\(Self.seconds(self.settings.timeout)))"
        case .outputTooLarge: ended = "killed: printed more than \(CommandSettings.outputLimit >> 10) KiB"
        case .stopped: ended = "stopped: bearerd is shutting down"
        case .lost: ended = "ended, exit status unknown"
        }
        self.record.record(.init(at: self.clock.wallNow, ended: ended, stderr: stderr))
        let said = stderr.map { "; it said: \($0)" } ?? ""
        switch result.ending {
        case .exited(0):
            do {
                _ = try CommandOutput.parse(result.stdout)
            } catch {
                throw TokenEngineError.unreachable(
                    "auth.command: \(program) exited 0, but \(error.message)\(said)"
                )
            }
            return TokenHTTPResponse(status: 200, body: result.stdout)
        case .exited(let code):
            throw TokenEngineError.unreachable("auth.command: \(program) exited with status \(code)\(said)")
        case .signalled(let signal):
            throw TokenEngineError.unreachable("auth.command: \(program) was killed by signal \(signal)\(said)")
        case .timedOut:
            throw TokenEngineError.unreachable(
                "auth.command: \(program) did not finish within auth.command_timeout (\(Self.seconds(self.settings.timeout))) and was killed\(said)"
            )
        case .stopped:
            throw TokenEngineError.unreachable("auth.command: \(program) was stopped: bearerd is shutting down")
        case .lost:
            throw TokenEngineError.unreachable("auth.command: \(program) ended, but its exit status could not be read")
        case .outputTooLarge:
            throw TokenEngineError.unreachable(
                "auth.command: \(program) printed more than \(CommandSettings.outputLimit >> 10) KiB on standard output and was killed: it should print a token, or JSON with one"
            )
        }
    }

    static func seconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let milliseconds = attoseconds / 1_000_000_000_000_000
        return milliseconds == 0 ? "\(seconds)s" : "\(seconds * 1000 + milliseconds)ms"
    }
}
