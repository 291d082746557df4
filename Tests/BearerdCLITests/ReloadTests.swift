import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// SIGHUP while requests flow: a valid config moves the upstream, a listener and the log level;
/// an invalid one is refused; no request fails; systemd hears RELOADING then READY each time.
@Suite("Reload on SIGHUP", .serialized, .timeLimit(.minutes(2)))
struct ReloadTests {
    static func config(upstream: Int, listen: [String], level: String = "info", token: String) -> String {
        """
        listen: [\(listen.map { "\"\($0)\"" }.joined(separator: ", "))]
        upstream:
          url: http://127.0.0.1:\(upstream)
        auth:
          static_token_file: \(token)
        admin:
          socket: \(URL(fileURLWithPath: token).deletingLastPathComponent().path)/run/admin.sock
        log:
          level: \(level)
          access: false
        """
    }

    @Test func reloadsWhileRequestsFlowAndRefusesABadConfig() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let notify = try NotifyListener(directory: directory.path)
        let token = try directory.write("reload-token-5150\n", to: "token")
        let path = try directory.write(
            Self.config(upstream: first.port, listen: ["127.0.0.1:0"], token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(
            ["serve", "-c", path],
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "200000"]
        )
        try await waitUntil { notify.messages.contains { $0.hasPrefix("READY=1") } }
        try await waitUntil { notify.messages.contains("WATCHDOG=1") }
        let port = try #require(bearerd.proxyPort)

        // Four clients, a new connection per request, until told to stop.
        let tally = Tally()
        let load = Self.load(port: port, group: group, tally: tally)
        try await waitUntil { tally.bodies.withLock { $0["first", default: 0] } > 200 }

        // A valid config: another upstream, a second listener, debug logging.
        #expect(!bearerd.stderr.contains("level=debug"))
        let extra = try FreePort.pick()
        try Self.config(
            upstream: second.port,
            listen: ["127.0.0.1:0", "127.0.0.1:\(extra)"],
            level: "debug",
            token: token
        )
        .write(toFile: path, atomically: true, encoding: .utf8)
        bearerd.signal(SIGHUP)
        try await waitUntil { bearerd.stderr.contains("msg=\"config reloaded\"") }
        try await waitUntil { tally.bodies.withLock { $0["second", default: 0] } > 200 }
        try await TestHTTPClient.withConnection(to: .tcp(port: extra), group: group) { client in
            let answer = try await client.send(.GET, "/on-the-new-listener")
            #expect(answer.status == 200 && answer.bodyText == "second")
        }
        #expect(bearerd.stderr.contains("level=debug msg=\"log level applied\""), "log.level applied")

        // An invalid config: refused, and the running one keeps serving.
        try "upstream:\n  url: nope\n".write(toFile: path, atomically: true, encoding: .utf8)
        let before = tally.bodies.withLock { $0["second", default: 0] }
        bearerd.signal(SIGHUP)
        try await waitUntil { bearerd.stderr.contains("the new config has errors") }
        try await waitUntil { tally.bodies.withLock { $0["second", default: 0] } > before + 200 }
        // A duration no timer can hold used to trap the running daemon on SIGHUP.
        let huge =
            Self.config(upstream: second.port, listen: ["127.0.0.1:0"], token: token)
            + "\nproxy:\n  header_timeout: 1e300s\n"
        try huge.write(toFile: path, atomically: true, encoding: .utf8)
        let beforeHuge = tally.bodies.withLock { $0["second", default: 0] }
        bearerd.signal(SIGHUP)
        try await waitUntil { bearerd.stderr.contains("proxy.header_timeout") }
        try await waitUntil { tally.bodies.withLock { $0["second", default: 0] } > beforeHuge + 200 }

        // A new token source is reported, not applied.
        let other = try directory.write("another-token-6262\n", to: "other-token")
        try Self.config(upstream: second.port, listen: ["127.0.0.1:0"], token: other)
            .write(toFile: path, atomically: true, encoding: .utf8)
        bearerd.signal(SIGHUP)
        try await waitUntil { bearerd.stderr.contains("the token source or the store changed") }
        #expect(bearerd.stderr.contains("keys=auth.static_token_file"))

        tally.running.store(false, ordering: .relaxed)
        await load.value
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        #expect(tally.failures.withLock { $0 }.isEmpty, "\(tally.failures.withLock { $0.prefix(5) })")
        #expect(second.requests.allSatisfy { $0.head.headers["authorization"] == ["Bearer reload-token-5150"] })
        let counts = tally.bodies.withLock { $0 }
        Self.log(
            "\(counts.values.reduce(0, +)) requests across 4 reloads: \(counts), failures: \(tally.failures.withLock { $0.count })"
        )

        // systemd heard, in order: READY with STATUS, watchdog pings, then RELOADING/READY four
        // times (pings between), then STOPPING.
        let messages = notify.messages
        #expect(messages.first == "READY=1\nSTATUS=serving with a static token")
        let firstReload = try #require(messages.firstIndex { $0.hasPrefix("RELOADING=1") })
        #expect(messages[1..<firstReload].contains("WATCHDOG=1"))
        let events = messages.filter { $0 != "WATCHDOG=1" }.map {
            $0.split(separator: "\n").first.map(String.init) ?? ""
        }
        #expect(
            events == [
                "READY=1", "RELOADING=1", "READY=1", "RELOADING=1", "READY=1", "RELOADING=1", "READY=1",
                "RELOADING=1", "READY=1", "STOPPING=1",
            ]
        )
        #expect(notify.messages.filter { $0.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") }.count == 4)
        await first.stop()
        await second.stop()
        try await group.shutdownGracefully()
    }

    /// Twenty reloads, each moving the upstream, while four clients send each request on a new
    /// connection: requests caught between their head and their upstream connection are taken
    /// over by the new settings, so none fails, and the new upstream takes the traffic each time.
    @Test func twentyReloadsUnderNewConnectionsFailNoRequest() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("reload-token-5150\n", to: "token")
        let path = try directory.write(
            Self.config(upstream: first.port, listen: ["127.0.0.1:0"], token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        let tally = Tally()
        let load = Self.load(port: port, group: group, tally: tally)
        for round in 0..<20 {
            let upstream = round % 2 == 0 ? second : first
            let before = upstream.requests.count
            try Self.config(upstream: upstream.port, listen: ["127.0.0.1:0"], token: token)
                .write(toFile: path, atomically: true, encoding: .utf8)
            let reload = try await BearerdProcess.run(["reload", "-c", path])
            #expect(reload.status == 0, "\(reload.stderr)")
            try await waitUntil { upstream.requests.count > before + 20 }
        }
        tally.running.store(false, ordering: .relaxed)
        await load.value
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        let failures = tally.failures.withLock { $0 }
        #expect(failures.isEmpty, "\(failures.count) failed: \(failures.prefix(3))")
        Self.log("\(tally.bodies.withLock { $0 }) across 20 reloads, failures: \(failures.count)")
        await first.stop()
        await second.stop()
        try await group.shutdownGracefully()
    }

    /// A reload that moves the upstream and changes the token source at once would send the
    /// running source's token to the new upstream (the new source starts only at a restart):
    /// nothing of it is applied, and the reload says so.
    @Test func anUpstreamAndATokenSourceChangedTogetherAreNotApplied() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("token-for-first-api-1\n", to: "token")
        let other = try directory.write("token-for-second-api-2\n", to: "other-token")
        let path = try directory.write(
            Self.config(upstream: first.port, listen: ["127.0.0.1:0"], token: token),
            to: "b.yaml"
        )
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        try Self.config(upstream: second.port, listen: ["127.0.0.1:0"], token: other)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let reload = try await BearerdProcess.run(["reload", "-c", path])
        #expect(reload.status != 0 && reload.stderr.contains("upstream.url"), "\(reload.stderr)")
        let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
            try await $0.send(.GET, "/x")
        }
        #expect(answer.status == 200 && answer.bodyText == "first", "\(answer.bodyText)")
        #expect(second.requests.isEmpty, "the new upstream got \(second.requests.map(\.head.headers))")
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await first.stop()
        await second.stop()
    }

    /// Moving the upstream while a key of the connection to the token server waits for a
    /// restart (a timeout, not what the token is for) is an ordinary reload: the upstream moves.
    @Test func anUpstreamMovedWithATimeoutThatWaitsForARestartIsApplied() async throws {
        let group = MultiThreadedEventLoopGroup.singleton
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("token-for-both-3\n", to: "token")
        func config(upstream: Int, timeout: String) -> String {
            Self.config(upstream: upstream, listen: ["127.0.0.1:0"], token: token)
                .replacingOccurrences(
                    of: "  static_token_file:",
                    with: "  request_timeout: \(timeout)\n  static_token_file:"
                )
        }
        let path = try directory.write(config(upstream: first.port, timeout: "5s"), to: "b.yaml")
        let bearerd = try BearerdProcess(["serve", "-c", path])
        try await bearerd.waitUntilReady()
        let port = try #require(bearerd.proxyPort)
        try config(upstream: second.port, timeout: "6s").write(toFile: path, atomically: true, encoding: .utf8)
        let reload = try await BearerdProcess.run(["reload", "-c", path])
        #expect(
            reload.status == 75 && reload.stdout.contains("auth.request_timeout"),
            "\(reload.stdout)\(reload.stderr)"
        )
        let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
            try await $0.send(.GET, "/x")
        }
        #expect(answer.bodyText == "second")
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await first.stop()
        await second.stop()
    }

    /// Four clients, each request on a new connection, until `tally` says stop: what each got.
    static func load(port: Int, group: any EventLoopGroup, tally: Tally) -> Task<Void, Never> {
        Task {
            await withTaskGroup(of: Void.self) { tasks in
                for _ in 0..<4 {
                    tasks.addTask {
                        while tally.running.load(ordering: .relaxed) {
                            do {
                                let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group)
                                {
                                    try await $0.send(.GET, "/x")
                                }
                                if answer.status == 200 {
                                    tally.bodies.withLock { $0[answer.bodyText, default: 0] += 1 }
                                } else {
                                    tally.failures.withLock { $0.append("status \(answer.status) \(answer.bodyText)") }
                                }
                            } catch {
                                tally.failures.withLock { $0.append("\(error)") }
                            }
                        }
                    }
                }
            }
        }
    }

    final class Tally: Sendable {
        let bodies = Mutex<[String: Int]>([:])
        let failures = Mutex<[String]>([])
        let running = Atomic<Bool>(true)
    }

    static func log(_ text: String) {
        FileHandle.standardError.write(Data("reload: \(text)\n".utf8))
    }
}
