import BearerdAuth
import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdTokens

/// What `auth.command` may print, and what bearerd makes of a run: each form such programs
/// print, each way a run goes wrong, and never a token in a message.
@Suite("auth.command: its output and its runs")
struct CommandOutputTests {
    static let token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJhIn0.c2ln"

    @Test func aBareTokenOnOneLine() throws {
        let issued = try CommandOutput.parse(Array("  \(Self.token)\n".utf8))
        #expect(issued.accessToken.value == Self.token)
        #expect(issued.lifetime == nil && issued.expiresAt == nil && issued.refreshToken == nil)
    }

    @Test func kubectlsExecCredential() throws {
        let json = """
            {"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1",
             "status":{"token":"\(Self.token)","expirationTimestamp":"2030-01-02T03:04:05Z"}}
            """
        let issued = try CommandOutput.parse(Array(json.utf8))
        #expect(issued.accessToken.value == Self.token)
        #expect(issued.expiresAt == Date(timeIntervalSince1970: 1_893_553_445))
    }

    @Test func anAccessTokenWithExpiresInOrExpiresAt() throws {
        let relative = try CommandOutput.parse(Array(#"{"access_token":"abcdefgh","expires_in":"300"}"#.utf8))
        #expect(relative.accessToken.value == "abcdefgh" && relative.lifetime == .seconds(300))
        let absolute = try CommandOutput.parse(Array(#"{"access_token":"abcdefgh","expires_at":1893553445000}"#.utf8))
        #expect(absolute.expiresAt == Date(timeIntervalSince1970: 1_893_553_445))
        let stamped = try CommandOutput.parse(
            Array(#"{"access_token":"abcdefgh","expires_at":"2030-01-02T03:04:05Z"}"#.utf8)
        )
        #expect(stamped.expiresAt == Date(timeIntervalSince1970: 1_893_553_445))
    }

    @Test(arguments: [
        ("", "printed nothing"),
        ("\(token)\nsecond line\n", "more than one line"),
        ("a token with spaces\n", "characters a bearer token may not have"),
        (#"{"status":{"clientCertificateData":"x"}}"#, "no status.token"),
        (#"{"status":{"token":"abcdefgh","expirationTimestamp":"soon"}}"#, "expirationTimestamp is not an RFC 3339"),
        (#"{"token":"abcdefgh"}"#, "neither status.token"),
        (#"{"access_token":"abcdefgh","expires_in":"later"}"#, "expires_in is not a number"),
        (#"{"access_token":"abcdefgh\r\nX: b"}"#, "characters a bearer token may not have"),
        ("{not json", "not a JSON object"),
        ("null\n", "too short to be a token"),
        (#"{"access_token":"undefined"}"#, "too short to be a token"),
    ])
    func whatItCannotReadIsSaidWithoutTheValue(output: String, said: String) {
        #expect {
            _ = try CommandOutput.parse(Array(output.utf8))
        } throws: { error in
            let message = "\(error)"
            return message.contains(said) && !message.contains(Self.token) && !message.contains("abcdefgh")
        }
    }

    /// A runner that returns what it is given, counting its runs.
    struct ScriptedRunner: CommandRunner {
        let result: Result<CommandResult, CommandRunError>

        func run(_ settings: CommandSettings) async throws(CommandRunError) -> CommandResult {
            try self.result.get()
        }
    }

    static func send(
        _ result: Result<CommandResult, CommandRunError>
    ) async -> (Result<TokenHTTPResponse, any Error>, CommandRecord) {
        let record = CommandRecord()
        let transport = CommandTokenTransport(
            settings: CommandSettings(argv: ["/opt/helper/get-token", "--profile", "prod"], timeout: .seconds(7)),
            runner: ScriptedRunner(result: result),
            record: record,
            clock: ManualTokenClock()
        )
        let sent: Result<TokenHTTPResponse, any Error>
        do {
            sent = .success(try await transport.send(TokenHTTPRequest(url: "command:")))
        } catch {
            sent = .failure(error)
        }
        return (sent, record)
    }

    @Test func exitZeroIsTheTokenServersAnswer() async throws {
        let (sent, record) = await Self.send(
            .success(CommandResult(ending: .exited(0), stdout: Array("\(Self.token)\n".utf8), stderr: []))
        )
        let response = try sent.get()
        #expect(response.status == 200 && response.body == Array("\(Self.token)\n".utf8))
        #expect(record.lastRun?.ended == "exit 0" && record.lastRun?.stderr == nil)
    }

    @Test(arguments: [
        (
            CommandResult.Ending.exited(3), "exited with status 3; it said: login required: run helper login?[31m",
            "exit 3"
        ),
        (.signalled(9), "was killed by signal 9", "killed by signal 9"),
        (
            .timedOut, "did not finish within auth.command_timeout (7s) and was killed",
            "killed after auth.command_timeout (7s)"
        ),
        (
            .outputTooLarge, "printed more than 64 KiB on standard output and was killed",
            "killed: printed more than 64 KiB"
        ),
    ])
    func aFailedRunIsAnUnavailableServerNamingTheProgramNotItsOutput(
        ending: CommandResult.Ending,
        said: String,
        ended: String
    ) async throws {
        let stderr = Array("\n  login required: run helper login\u{1B}[31m\nsecond line\n".utf8)
        let (sent, record) = await Self.send(
            .success(CommandResult(ending: ending, stdout: Array(Self.token.utf8), stderr: stderr))
        )
        guard case .failure(let error as TokenEngineError) = sent else {
            Issue.record("no error: \(sent)")
            return
        }
        #expect(error.code == .unreachable)
        #expect(error.message.hasPrefix("auth.command: /opt/helper/get-token "), "\(error.message)")
        #expect(error.message.contains(said), "\(error.message)")
        #expect(!error.message.contains(Self.token) && !error.message.contains("prod"))
        #expect(record.lastRun?.ended == ended)
        #expect(record.lastRun?.stderr == "login required: run helper login?[31m")
    }

    @Test func theFirstLineOfStandardErrorNeverCarriesAToken() {
        let line = CommandRecord.firstLine(Array("\r\n debug: got \(Self.token) for \u{202E}you\r\nnext\n".utf8))
        #expect(line == "debug: got … for ?you", "\(line ?? "nil")")
    }

    @Test func exitZeroWithOutputItCannotReadIsAFailureToo() async {
        let (sent, _) = await Self.send(
            .success(CommandResult(ending: .exited(0), stdout: Array("Token: \(Self.token)\n".utf8), stderr: []))
        )
        guard case .failure(let error as TokenEngineError) = sent else {
            Issue.record("no error")
            return
        }
        #expect(error.code == .unreachable && error.message.contains("exited 0, but its output"), "\(error.message)")
        #expect(!error.message.contains(Self.token))
    }

    @Test func aProgramThatCannotStartSaysWhy() async {
        let (sent, record) = await Self.send(.failure(CommandRunError("cannot run get-token: no such program")))
        guard case .failure(let error as TokenEngineError) = sent else {
            Issue.record("no error")
            return
        }
        #expect(error.message == "auth.command: cannot run get-token: no such program")
        #expect(record.lastRun?.ended == "not started")
    }

    @Test func statusNamesTheProgramAndItsLastRunOnly() {
        let record = CommandRecord()
        let source = CommandSource(
            settings: CommandSettings(argv: ["/opt/helper/get-token", "--secret-profile"], timeout: .seconds(5)),
            record: record
        )
        record.record(.init(at: Date(timeIntervalSince1970: 5), ended: "exit 1", stderr: "expired"))
        let status = source.clientGrantStatus(now: Date())
        #expect(status?.source == "command" && status?.command == "/opt/helper/get-token")
        #expect(status?.commandEnded == "exit 1" && status?.commandStderr == "expired")
        #expect(source.clientGrant == .command)
    }
}

/// A store written under another source (a login before the config named auth.command): its
/// user session is not refreshed at a server this source does not have; the program is run.
@Suite("auth.command: a session of another source")
struct CommandSourceSessionTests {
    @Test func aStoredUserSessionGivesWayToTheProgram() async throws {
        let harness = TokenHarness(
            source: CommandSource(settings: CommandSettings(argv: ["/bin/helper"], timeout: .seconds(5))),
            stored: StoredTokens(refreshToken: Secret("stored-refresh-token-77")),
            seed: nil
        ) { request, _ in
            #expect(request.method == "EXEC")
            return TokenHTTPResponse(status: 200, body: Array("from-the-program-0001\n".utf8))
        }
        let token = try await harness.manager.token()
        #expect(token.value == "from-the-program-0001")
        #expect(harness.endpoint.requests.allSatisfy { $0.method == "EXEC" })
    }
}
