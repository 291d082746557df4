import BearerdAdmin
import BearerdProxy
import BearerdSystemd
import BearerdTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Synchronization
import Testing

@testable import BearerdCLI

/// Reload in process, without SIGHUP or a spawned daemon: the proxy and ``ReloadService`` share
/// a ``ProxyControl`` as `serve` wires them, and `reload()` is called directly.
@Suite("reload in process", .timeLimit(.minutes(1)))
struct ReloadInProcessTests {
    static func config(upstream: Int, level: String, token: String, directory: TemporaryDirectory) throws -> String {
        try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream)
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/run/admin.sock
            log:
              level: \(level)
            """,
            to: "bearerd.yaml"
        )
    }

    @Test func swapsTheUpstreamAndLogLevelAndKeepsServingOnABrokenConfig() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let token = try directory.write("reload-token-58\n", to: "token")
        let path = try Self.config(upstream: first.port, level: "info", token: token, directory: directory)
        let logger = Logger(label: "test")
        guard case .success(let prepared) = Startup.prepare(configPath: path, logger: logger, environment: [:]),
            case .staticToken(let provider) = prepared.tokens
        else {
            Issue.record("the first config does not load")
            return
        }
        let control = ProxyControl()
        let listening = AsyncStream.makeStream(of: Void.self)
        let server = ProxyServer(
            settings: prepared.settings,
            tokens: provider,
            group: group,
            logger: logger,
            control: control,
            onListening: { _ in listening.continuation.yield() }
        )
        let level = LogLevelSetting(.info)
        let (events, eventSink) = AsyncStream.makeStream(of: SystemdNotifyService.ReloadEvent.self)
        let reopened = Mutex(0)
        let reload = ReloadService(
            configPath: path,
            environment: [:],
            running: prepared.configuration,
            proxy: control,
            manager: nil,
            logLevel: level,
            events: eventSink,
            logger: logger,
            reopenLogs: { reopened.withLock { $0 += 1 } }
        )
        let services = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await services.run() }
            var ready = listening.stream.makeAsyncIterator()
            _ = await ready.next()
            let port = try #require(control.addresses.first.flatMap { Int($0.split(separator: ":").last ?? "") })
            func body() async throws -> String {
                let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                    try await client.send(.GET, "/which")
                }
                return String(buffer: answer.body)
            }
            #expect(try await body() == "first")

            _ = try Self.config(upstream: second.port, level: "debug", token: token, directory: directory)
            #expect(await reload.reload() == .applied(restartPending: []))
            #expect(try await body() == "second")
            #expect(level.value == .debug)

            _ = try directory.write("upstream:\n  url: ftp://nowhere\n", to: "bearerd.yaml")
            if case .refused(let reason) = await reload.reload() {
                #expect(reason.contains("upstream.url"), "the refusal names the key at fault: \(reason)")
            } else {
                Issue.record("a broken config was applied")
            }
            #expect(try await body() == "second", "a broken config stopped the running one")
            // logrotate's reload reopens the access file even when the config is refused.
            #expect(reopened.withLock { $0 } == 2)
            #expect(level.value == .debug)

            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        eventSink.finish()
        var seen: [SystemdNotifyService.ReloadEvent] = []
        for await event in events { seen.append(event) }
        #expect(seen == [.started, .finished, .started, .finished])
        #expect(second.requests.last?.head.headers["authorization"] == ["Bearer reload-token-58"])
        await first.stop()
        await second.stop()
        try await group.shutdownGracefully()
    }
}
