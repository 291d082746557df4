import BearerdAuth
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@testable import BearerdCLI

/// `auth.command` run for real: programs the test writes, each printing one form, failing,
/// hanging, flooding, leaving a helper behind. No shell is put in front of them by bearerd.
@Suite("auth.command's runner against real programs", .serialized, .timeLimit(.minutes(1)))
struct SpawnedCommandRunnerTests {
    static func script(
        _ body: String,
        in directory: TemporaryDirectory,
        named name: String = "get-token"
    ) throws
        -> String
    {
        try directory.write("#!/bin/sh\n" + body + "\n", to: name, mode: 0o700)
    }

    static func run(
        _ argv: [String],
        timeout: Duration = .seconds(10),
        environment: [NameValue] = [],
        directory: String? = nil
    ) async throws -> CommandResult {
        try await SpawnedCommandRunner().run(
            CommandSettings(argv: argv, environment: environment, directory: directory, timeout: timeout)
        )
    }

    @Test func itsArgumentsEnvironmentAndFolderAreTheConfigsAndNoShellReadsThem() async throws {
        let directory = try TemporaryDirectory()
        let program = try Self.script(
            #"printf '%s|' "$@"; printf '%s|%s|%s' "$HELPER_PROFILE" "$(pwd)" "$(cat)""#,
            in: directory
        )
        let result = try await Self.run(
            [program, "a b", "$HOME", "; rm -rf /"],
            environment: [NameValue(name: "HELPER_PROFILE", value: "prod")],
            directory: "/tmp"
        )
        #expect(result.ending == .exited(0))
        #expect(String(decoding: result.stdout, as: UTF8.self) == "a b|$HOME|; rm -rf /|prod|/tmp|")
    }

    @Test func aNameIsLookedUpInPath() async throws {
        let result = try await Self.run(["printf", "token-from-path"])
        #expect(result.ending == .exited(0) && result.stdout == Array("token-from-path".utf8))
    }

    @Test func itInheritsNoDescriptorOfTheDaemonsAndDefaultSignals() async throws {
        let directory = try TemporaryDirectory()
        // A descriptor the daemon holds without close-on-exec (as a library might leave one).
        let held = open(directory.path + "/held", O_CREAT | O_RDWR, 0o600)
        defer { close(held) }
        // The daemon ignores SIGPIPE (as every NIO program does); the program must not.
        // Left ignored: NIO ignores it once per process, and a test that put the default back
        // after NIO's first socket would let a write to a gone peer kill the test process.
        signal(SIGPIPE, SIG_IGN)
        let program = try Self.script(
            #"ls /proc/self/fd | sort -n | tr '\n' ' '; grep -E '^(SigIgn|SigBlk)' /proc/self/status | tr '\n' ' '"#,
            in: directory
        )
        let result = try await Self.run([program])
        let text = String(decoding: result.stdout, as: UTF8.self)
        // 0, 1, 2, and the descriptor `ls` opens for /proc/self/fd.
        #expect(text.hasPrefix("0 1 2 3 "), "\(text)")
        #expect(!text.contains(" 4 ") && !text.contains("\(held) "), "\(text)")
        // Signals 1 to 31 (SIGPIPE among them) neither ignored nor blocked; glibc's own above 31
        // are its business.
        for field in ["SigIgn:", "SigBlk:"] {
            let hex = text.components(separatedBy: field).last?.split(separator: " ").first.map(String.init) ?? ""
            let mask = try #require(UInt64(hex.trimmingCharacters(in: .whitespaces), radix: 16), "\(text)")
            #expect(mask & 0x7FFF_FFFF == 0, "\(field) \(hex)")
        }
    }

    @Test func aFailureKeepsItsExitAndItsStandardError() async throws {
        let directory = try TemporaryDirectory()
        let program = try Self.script("echo 'session expired: run helper login' >&2; exit 4", in: directory)
        let result = try await Self.run([program])
        #expect(result.ending == .exited(4))
        #expect(String(decoding: result.stderr, as: UTF8.self) == "session expired: run helper login\n")
        let killed = try await Self.run([try Self.script("kill -TERM $$", in: directory, named: "die")])
        #expect(killed.ending == .signalled(SIGTERM))
    }

    @Test func aProgramThatHangsIsKilledWithItsProcessGroupAtTheTimeout() async throws {
        let directory = try TemporaryDirectory()
        let pidFile = directory.path + "/sleeper"
        // The shell waits on a `sleep` that holds the output pipe: killing the shell alone
        // would leave the pipe open and the run waiting.
        let program = try Self.script("sleep 100 & echo $! > \(pidFile); wait", in: directory)
        let started = ContinuousClock.now
        let result = try await Self.run([program], timeout: .seconds(1))
        let took = ContinuousClock.now - started
        #expect(result.ending == .timedOut)
        #expect(took < .seconds(3), "\(took)")
        let sleeper = try #require(
            Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        try await waitUntil(.seconds(2), every: .milliseconds(20)) { kill(sleeper, 0) != 0 }
    }

    @Test func aFloodIsCutAt64KiBAndKilled() async throws {
        let result = try await Self.run(["head", "-c", "1048576", "/dev/zero"])
        #expect(result.ending == .outputTooLarge && result.stdout.isEmpty)
        let exactly = try await Self.run(["head", "-c", "65536", "/dev/zero"])
        #expect(exactly.ending == .exited(0) && exactly.stdout.count == 65536)
    }

    @Test func aHelperLeftRunningDoesNotHoldTheRunOpen() async throws {
        let directory = try TemporaryDirectory()
        // An agent started in the background keeps the output pipe; the program itself exits.
        let program = try Self.script("sleep 30 & echo token-1", in: directory)
        let started = ContinuousClock.now
        let result = try await Self.run([program], timeout: .seconds(20))
        #expect(result.ending == .exited(0) && result.stdout == Array("token-1\n".utf8))
        #expect(ContinuousClock.now - started < .seconds(5))
    }

    @Test func aProgramThatIsNotThereOrNotExecutableSaysSo() async throws {
        await #expect {
            _ = try await Self.run(["/nonexistent/get-token"])
        } throws: { error in
            "\(error)".contains("no such program") && "\(error)".contains("/nonexistent/get-token")
        }
        let directory = try TemporaryDirectory()
        let plain = try directory.write("echo x\n", to: "plain", mode: 0o600)
        await #expect {
            _ = try await Self.run([plain])
        } throws: { error in
            "\(error)".contains("permission denied")
        }
    }

    @Test func cancellingTheRunKillsTheProgram() async throws {
        let directory = try TemporaryDirectory()
        let pidFile = directory.path + "/pid"
        let program = try Self.script("echo $$ > \(pidFile); exec sleep 100", in: directory)
        let run = Task { try await Self.run([program], timeout: .seconds(60)) }
        try await waitUntil(.seconds(5), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: pidFile) }
        run.cancel()
        let result = try await run.value
        #expect(result.ending == .signalled(SIGKILL) || result.ending == .stopped)
        let pid = try #require(
            Int32(try String(contentsOfFile: pidFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines))
        )
        try await waitUntil(.seconds(3), every: .milliseconds(20)) { kill(pid, 0) != 0 }
    }

    @Test func shutdownStopsARunInProgressAtOnce() async throws {
        let directory = try TemporaryDirectory()
        let pidFile = directory.path + "/pid"
        // Ignores SIGTERM: SIGKILL follows a second later.
        let program = try Self.script("trap '' TERM; echo $$ > \(pidFile); while :; do sleep 1; done", in: directory)
        let started = ContinuousClock.now
        let runner = SpawnedCommandRunner()
        let run = Task {
            try await runner.run(CommandSettings(argv: [program], timeout: .seconds(60)))
        }
        try await waitUntil(.seconds(5), every: .milliseconds(20)) { FileManager.default.fileExists(atPath: pidFile) }
        runner.stopAll()
        let result = try await run.value
        #expect(result.ending == .stopped)
        #expect(ContinuousClock.now - started < .seconds(6))
    }

    @Test func bearerdsOwnVariablesStayWithBearerd() {
        let environment = SpawnedCommandRunner.environment(
            [
                "PATH": "/usr/bin", "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s3cret", "NOTIFY_SOCKET": "/run/n",
                "BEARERD_CONFIG": "/etc/b.yaml", "LISTEN_FDS": "1", "WATCHDOG_USEC": "1", "JOURNAL_STREAM": "8:1",
                "HOME": "/root",
            ],
            adding: [
                NameValue(name: "HOME", value: "/var/lib/bearerd"), NameValue(name: "OTEL_SDK_DISABLED", value: "true"),
            ]
        )
        #expect(environment == ["HOME=/var/lib/bearerd", "OTEL_SDK_DISABLED=true", "PATH=/usr/bin"])
    }
}
