import BearerdAdmin
import BearerdAuth
import BearerdSockets
import BearerdTestSupport
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import ServiceLifecycle
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The admin socket in process, without spawning bearerd: it appears with mode 0600, answers
/// the admin routes, refuses to take over a socket another server still serves, and is gone
/// after shutdown.
@Suite("admin socket in process", .timeLimit(.minutes(1)))
struct AdminSocketTests {
    @Test func servesOwnerOnlyAndCleansUp() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("admin-socket-token-31\n", to: "token")
        let path = directory.path + "/admin.sock"
        let logger = Logger(label: "test")
        let provider = try StaticTokenProvider(path: token, logger: logger)
        let api = AdminAPI(backend: .staticToken(provider, path: token), logger: logger)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let ready = AsyncStream.makeStream(of: Void.self)
        let server = AdminServer(path: path, api: api, group: group, logger: logger) { ready.continuation.yield() }
        let services = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await services.run() }
            var readiness = ready.stream.makeAsyncIterator()
            _ = await readiness.next()
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
            let answer = try await TestHTTPClient.withConnection(to: .unix(path: path), group: group) { client in
                try await client.send(.GET, "/v1/status")
            }
            #expect(answer.status == 200)
            #expect(String(buffer: answer.body).contains("\"state\""))
            #expect(!String(buffer: answer.body).contains("admin-socket-token-31"))
            // A second server may not take the path over while the first one serves it.
            let second = AdminServer(path: path, api: api, group: group, logger: logger)
            await #expect(throws: (any Error).self) { try await second.run() }
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        var info = stat()
        #expect(lstat(path, &info) != 0, "the socket file is left after shutdown")
        try await group.shutdownGracefully()
    }

    /// sun_path holds 107 bytes and a NUL: a socket path of exactly 107 bytes binds (the name
    /// bound first and renamed is no longer than it) and answers.
    @Test func aPathOfTheKernelsLongestLengthServes() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("admin-socket-token-31\n", to: "token")
        let path = try directory.socketPath(length: 107, named: "admin.sock")
        let logger = Logger(label: "test")
        let provider = try StaticTokenProvider(path: token, logger: logger)
        let api = AdminAPI(backend: .staticToken(provider, path: token), logger: logger)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let ready = AsyncStream.makeStream(of: Void.self)
        let server = AdminServer(path: path, api: api, group: group, logger: logger) { ready.continuation.yield() }
        let services = ServiceGroup(services: [server], logger: logger)
        try await withThrowingTaskGroup { tasks in
            tasks.addTask {
                // A server that cannot bind ends the wait for readiness.
                defer { ready.continuation.finish() }
                try await services.run()
            }
            var readiness = ready.stream.makeAsyncIterator()
            _ = await readiness.next()
            var info = stat()
            #expect(lstat(path, &info) == 0 && info.st_mode & 0o777 == 0o600)
            let answer = try await TestHTTPClient.withConnection(to: .unix(path: path), group: group) { client in
                try await client.send(.GET, "/v1/status")
            }
            #expect(answer.status == 200)
            await services.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        let left = try FileManager.default.contentsOfDirectory(atPath: (path as NSString).deletingLastPathComponent)
        #expect(left.isEmpty, "no socket, temporary or final, is left: \(left)")
        try await group.shutdownGracefully()
    }

    /// Connections that arrive as the daemon stops (a `bearerd status` at `systemctl stop`) are
    /// closed, not a crash: a connection wrapped in the initializer and dropped with the accept
    /// stream trapped the process (apple/swift-nio#3481).
    @Test func connectionsArrivingAtShutdownDoNotCrashIt() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("t\n", to: "token")
        let logger = Logger(label: "test")
        let provider = try StaticTokenProvider(path: token, logger: logger)
        let api = AdminAPI(backend: .staticToken(provider, path: token), logger: logger)
        // One loop: with two, a connection still being accepted when the group shuts down makes
        // NIO close it on a loop already stopped, which SWIFTNIO_STRICT turns into a crash of
        // the test run (a teardown race of the test, not the one this test is about).
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        for round in 0..<40 {
            let path = directory.path + "/admin-\(round).sock"
            let ready = AsyncStream.makeStream(of: Void.self)
            let server = AdminServer(path: path, api: api, group: group, logger: logger) { ready.continuation.yield() }
            let services = ServiceGroup(services: [server], logger: logger)
            try await withThrowingTaskGroup { tasks in
                tasks.addTask { try await services.run() }
                var readiness = ready.stream.makeAsyncIterator()
                _ = await readiness.next()
                for _ in 0..<4 { _ = UnixSocketFile.connectError(path) }
                await services.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }
        try await group.shutdownGracefully()
    }
}
