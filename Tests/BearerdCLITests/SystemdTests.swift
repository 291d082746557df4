import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// bearerd under systemd, without systemd: a fake `$NOTIFY_SOCKET`, and a launcher that passes
/// a listening socket the way `bearerd.socket` does.
@Suite("systemd: notify and socket activation", .serialized, .timeLimit(.minutes(2)))
struct SystemdTests {
    static func staticConfig(
        _ directory: TemporaryDirectory,
        upstream: Int,
        listen: String = "127.0.0.1:0"
    ) throws -> String {
        let token = try directory.write("systemd-test-token-77\n", to: "token")
        return try directory.write(
            """
            listen: ["\(listen)"]
            upstream:
              url: http://127.0.0.1:\(upstream)
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/run/admin.sock
            """,
            to: "b.yaml"
        )
    }

    @Test func theNotifySocketHearsReadyStatusWatchdogThenStopping() async throws {
        let directory = try TemporaryDirectory()
        let notify = try NotifyListener(directory: directory.path)
        let config = try Self.staticConfig(directory, upstream: 9)
        let bearerd = try BearerdProcess(
            ["serve", "-c", config],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "400000"]
        )
        try await waitUntil { notify.messages.contains { $0.contains("READY=1") } }
        #expect(bearerd.stderr.contains("msg=listening") && bearerd.stderr.contains("admin socket ready"))
        try await waitUntil { notify.messages.filter { $0 == "WATCHDOG=1" }.count >= 3 }
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        let messages = notify.messages
        #expect(messages.first == "READY=1\nSTATUS=serving with a static token")
        #expect(messages.last == "STOPPING=1")
        #expect(messages.dropFirst().dropLast().allSatisfy { $0 == "WATCHDOG=1" }, "\(messages)")
    }

    @Test func aWatchdogForAnotherProcessIsNotOurs() async throws {
        let directory = try TemporaryDirectory()
        let notify = try NotifyListener(directory: directory.path)
        let config = try Self.staticConfig(directory, upstream: 9)
        let bearerd = try BearerdProcess(
            ["serve", "-c", config],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"]
        )
        try await waitUntil { notify.messages.contains { $0.contains("READY=1") } }
        try await Task.sleep(for: .milliseconds(400))
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        #expect(!notify.messages.contains("WATCHDOG=1"))
    }

    @Test func aPassedListeningSocketIsServedInsteadOfTheConfiguredOnes() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let upstream = try await TestUpstream.start(group: group)
        let directory = try TemporaryDirectory()
        // The config names a port nobody will connect to; the passed socket wins.
        let config = try Self.staticConfig(directory, upstream: upstream.port, listen: "127.0.0.1:1")
        let launcher = try directory.write(
            """
            import os, socket, sys
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            s.listen(16)
            print("passed-port=%d" % s.getsockname()[1], file=sys.stderr, flush=True)
            os.dup2(s.fileno(), 3)
            os.set_inheritable(3, True)  # dup2 onto itself (fileno 3) leaves close-on-exec set
            env = dict(os.environ, LISTEN_FDS="1", LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES="bearerd.socket")
            os.execve(sys.argv[1], sys.argv[1:], env)
            """,
            to: "launch.py"
        )
        let bearerd = try BearerdProcess(
            program: "/usr/bin/env",
            ["python3", launcher, BearerdProcess.executable, "serve", "-c", config]
        )
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.number(after: "passed-port="))
        #expect(bearerd.proxyPort == port)
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let answer = try await client.send(.GET, "/through-the-passed-socket")
            #expect(answer.status == 200)
        }
        #expect(upstream.requests.last?.head.headers["authorization"] == ["Bearer systemd-test-token-77"])
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await upstream.stop()
        try await group.shutdownGracefully()
    }
}
