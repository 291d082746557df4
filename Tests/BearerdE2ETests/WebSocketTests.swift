import BearerdTestSupport
import Foundation
import NIOCore
import NIOPosix
import Testing

/// WebSocket through bearerd (issue 14, "New reach"), between two real peers of the
/// `websockets` package (`scripts/ws-peer`): the handshake goes upstream with the token (the
/// server refuses one without it), the upstream's 101 splices the connections, and 201 messages
/// up to 1 MiB go both ways intact.
@Suite(
    "WebSocket upgrades are spliced with the token on the handshake",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct WebSocketTests {
    /// Runs `scripts/ws-peer` with `arguments`; the process, with its output in `log`.
    static func peer(_ arguments: [String], log: String) throws -> ChildProcess {
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
        let process = ChildProcess()
        process.executableURL = ProjectScript.repository.appendingPathComponent("scripts/ws-peer")
        process.arguments = arguments
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// The echo server, its port, and a way to stop it.
    static func withServer(_ body: (Int) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        let portFile = directory.path + "/port"
        let server = try Self.peer(["server", portFile, ProxyFixture.token], log: directory.path + "/server.log")
        defer {
            // SIGKILL: a server that does not stop on SIGTERM holds the test no longer.
            server.signal(SIGKILL)
            server.waitUntilExit()
        }
        // The first run installs the package.
        try await waitUntil(.seconds(120)) { FileManager.default.fileExists(atPath: portFile) }
        try await body(try #require(Int(try String(contentsOfFile: portFile, encoding: .utf8))))
    }

    /// The client's verdict, through `port`.
    static func client(port: Int) async throws -> String {
        let directory = try TemporaryDirectory()
        let log = directory.path + "/client.log"
        let client = try Self.peer(["client", "ws://127.0.0.1:\(port)/chat"], log: log)
        try await waitUntil(.seconds(60)) { !client.isRunning }
        return try String(contentsOfFile: log, encoding: .utf8)
    }

    @Test func messagesGoBothWaysThroughASplicedConnection() async throws {
        try await Self.withServer { port in
            try await ProxyFixture.with(upstreamURL: "http://127.0.0.1:\(port)") { proxy in
                let verdict = try await Self.client(port: proxy.port)
                #expect(verdict.hasPrefix("ok 201 "), "\(verdict)")
                #expect(proxy.logText.contains("status=101"), "the handshake is in the access log")
            }
        }
    }

    @Test func aProtocolNotAllowedGoesAsAPlainRequestAndIsNotSwitched() async throws {
        try await Self.withServer { port in
            try await ProxyFixture.with(
                yaml: "proxy:\n  allow_upgrades: [foo]",
                upstreamURL: "http://127.0.0.1:\(port)"
            ) { proxy in
                let verdict = try await Self.client(port: proxy.port)
                #expect(verdict.hasPrefix("failed: InvalidStatus"), "\(verdict)")
            }
        }
    }

    @Test func aSplicedConnectionWhereNothingMovesClosesAfterTheIdleTimeout() async throws {
        try await Self.withServer { port in
            try await ProxyFixture.with(
                yaml: "proxy:\n  client_idle_timeout: 1s",
                upstreamURL: "http://127.0.0.1:\(port)"
            ) { proxy in
                try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                    try await connection.send(
                        "GET /chat HTTP/1.1\r\nHost: 127.0.0.1:\(proxy.port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                    )
                    let opened = try await connection.read(until: "hello")
                    #expect(opened.hasPrefix("HTTP/1.1 101 "), "\(opened)")
                    #expect(opened.lowercased().contains("upgrade: websocket"))
                    let start = ContinuousClock.now
                    _ = try await connection.read(until: "never sent")
                    let quiet = ContinuousClock.now - start
                    #expect(quiet >= .milliseconds(900) && quiet < .seconds(10), "closed after \(quiet)")
                }
            }
        }
    }
}
