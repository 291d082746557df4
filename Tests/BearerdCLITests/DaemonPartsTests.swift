import BearerdSystemd
import BearerdTestSupport
import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import BearerdCLI

/// The daemon's parts in process: the watchdog's liveness probe and what it gates, and the
/// instances `status --all` lists.
@Suite("daemon parts", .timeLimit(.minutes(1)))
struct DaemonPartsTests {
    @Test func everyLoopThatRunsTasksIsAlive() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 3)
        #expect(await EventLoopLiveness(group: group).check(within: .seconds(5)))
        try await group.shutdownGracefully()
    }

    @Test func oneStuckLoopMakesTheDaemonNotAlive() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let release = Atomic<Bool>(false)
        let loops = Array(group.makeIterator())
        loops[1].execute {
            while !release.load(ordering: .relaxed) { usleep(1000) }
        }
        #expect(await !EventLoopLiveness(group: group).check(within: .milliseconds(100)))
        release.store(true, ordering: .relaxed)
        #expect(await EventLoopLiveness(group: group).check(within: .seconds(5)))
        try await group.shutdownGracefully()
    }

    @Test func theWatchdogIsPingedOnlyWhileAlive() async throws {
        let directory = try TemporaryDirectory()
        let notify = try NotifyListener(directory: directory.path)
        let alive = Atomic<Bool>(true)
        let readiness = Readiness(parts: ["proxy"])
        let (reloads, _) = AsyncStream.makeStream(of: SystemdNotifyService.ReloadEvent.self)
        let service = SystemdNotifyService(
            environment: ["NOTIFY_SOCKET": notify.path, "WATCHDOG_USEC": "40000"],
            processID: getpid(),
            readiness: readiness,
            reloads: reloads,
            logger: Logger(label: "test"),
            alive: { _ in alive.load(ordering: .relaxed) },
            status: { "testing" }
        )
        try await withThrowingTaskGroup { tasks in
            tasks.addTask { try await service.run() }
            readiness.mark("proxy")
            try await waitUntil { notify.messages.filter { $0 == "WATCHDOG=1" }.count >= 2 }
            alive.store(false, ordering: .relaxed)
            try await Task.sleep(for: .milliseconds(100))  // a ping that was being sent lands
            let before = notify.messages.count
            try await Task.sleep(for: .milliseconds(300))
            #expect(notify.messages.count == before, "pinged while not alive: \(notify.messages)")
            alive.store(true, ordering: .relaxed)
            try await waitUntil { notify.messages.count > before }
            #expect(notify.messages.last == "WATCHDOG=1")
            tasks.cancelAll()
        }
        #expect(notify.messages.first == "READY=1\nSTATUS=testing")
    }

    @Test func instancesAreTheConfigsOfTheDirectory() throws {
        let directory = try TemporaryDirectory()
        for name in ["bearerd.yaml", "work.yaml", "ci-2.yaml", "notes.txt", "bad name.yaml", "store.key"] {
            _ = try directory.write("", to: name)
        }
        let found = Instance.all(in: directory.path)
        #expect(found.map(\.unit) == ["bearerd.service", "bearerd@ci-2.service", "bearerd@work.service"])
        #expect(found.last?.configPath == directory.path + "/work.yaml")
        let environment = Instance(name: "work").environment(["PATH": "/bin"])
        #expect(environment["RUNTIME_DIRECTORY"] == "/run/bearerd@work")
        #expect(environment["STATE_DIRECTORY"] == "/var/lib/bearerd@work")
        // Under systemd the unit's own directories win.
        #expect(Instance(name: "work").environment(["RUNTIME_DIRECTORY": "/x"])["RUNTIME_DIRECTORY"] == "/x")
        #expect(Instance(name: nil).environment(["PATH": "/bin"]) == ["PATH": "/bin"])
        for bad in ["", "a/b", "..", "a b", String(repeating: "x", count: 65)] {
            #expect(Instance.problem(bad) != nil, "\(bad)")
        }
    }

    @Test func statusAllSaysWhichInstancesRunAndWhichConfigsAreBroken() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("t\n", to: "token")
        _ = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/run/admin.sock
            """,
            to: "idle.yaml"
        )
        _ = try directory.write("upstream: {url: ftp://x}\n", to: "broken.yaml")
        // Daemons other tests started by hand are listed after the units: not this test's.
        let rows = await InstanceStatus.rows(in: directory.path).filter { !$0.unit.hasPrefix("pid ") }
        #expect(rows.map(\.instance) == ["broken", "idle"])
        #expect(rows[0].state.hasPrefix("config has problems"))
        #expect(rows[1].state == "not running (no daemon on \(directory.path)/run/admin.sock)")
        let table = InstanceStatus.render(rows)
        #expect(table.hasPrefix("INSTANCE  UNIT"))
        #expect(table.contains("idle      bearerd@idle.service"))
    }
}

extension DaemonPartsTests {
    /// The deadline comes from `WATCHDOG_USEC`; a huge one must not overflow into a trap.
    @Test func aHugeDeadlineIsBoundedNotATrap() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        #expect(await EventLoopLiveness(group: group).check(within: .seconds(Int64.max / 2)))
        try await group.shutdownGracefully()
    }
}
