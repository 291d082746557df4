import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdCLI

/// `check-config` checks what `serve` will find held (a port, the admin socket, the store) and
/// names who holds it; `serve` names the key and the address when it cannot bind. Against a real
/// daemon of another config.
@Suite(
    "check-config and serve: what another bearerd holds",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct HeldResourcesTests {
    static func config(
        _ directory: TemporaryDirectory,
        name: String,
        port: Int,
        socket: String,
        store: String
    ) throws -> String {
        try directory.write(
            """
            listen: ["127.0.0.1:\(port)"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              token_url: http://127.0.0.1:9/token
              client_id: c
              client_auth: none
              client_credentials: true
            store:
              path: \(directory.path)/\(store)
              key_file: \(directory.path)/store.key
            admin:
              socket: \(directory.path)/\(socket)
            """,
            to: name
        )
    }

    static func freePort() throws -> Int {
        let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(probe) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) }
        }
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test func aSecondConfigSharingAPortTheStoreOrTheAdminSocketIsToldWhoHoldsIt() async throws {
        let directory = try TemporaryDirectory()
        _ = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let port = try Self.freePort()
        let first = try Self.config(directory, name: "a.yaml", port: port, socket: "a.sock", store: "a.store")
        let daemon = try BearerdProcess(["serve", "--config", first])
        defer { daemon.signal(SIGTERM) }
        try await daemon.waitUntilReady()

        // The running daemon's own config: OK, with a note.
        let own = try await BearerdProcess.run(["check-config", "-c", first])
        #expect(
            own.status == 0 && own.stdout.contains("a bearerd (pid \(daemon.pid)) serves this config now"),
            "\(own)"
        )

        let shared = try Self.config(directory, name: "b.yaml", port: port, socket: "a.sock", store: "a.store")
        let checked = try await BearerdProcess.run(["check-config", "-c", shared])
        #expect(checked.status != 0)
        for expected in [
            "admin.socket: \(directory.path)/a.sock is the admin socket of another bearerd (pid \(daemon.pid), config \(first))",
            "store.path: \(directory.path)/a.store is held by another bearerd (pid \(daemon.pid), config \(first)): give this config a store of its own (store.path)",
            "listen: 127.0.0.1:\(port) is in use by pid \(daemon.pid) (bearerd)",
        ] {
            #expect(checked.stderr.contains(expected), "\(expected) in \(checked.stderr)")
        }

        // A copy checked before it replaces the running config leaves out what is held.
        let copy = try await BearerdProcess.run(["check-config", "--skip-held", "-c", shared])
        #expect(copy.status == 0, "\(copy)")
        // The running daemon's own file with its admin socket changed (not restarted yet): the
        // store and the port are still its own.
        _ = try Self.config(directory, name: "a.yaml", port: port, socket: "a2.sock", store: "a.store")
        let moved = try await BearerdProcess.run(["check-config", "-c", first])
        #expect(moved.status == 0, "\(moved)")

        // serve names the key and the value, never NIO's "bind(descriptor:ptr:bytes:)".
        let store = try Self.config(
            directory,
            name: "c.yaml",
            port: try Self.freePort(),
            socket: "c.sock",
            store: "a.store"
        )
        let storeServe = try await BearerdProcess.run(["serve", "-c", store])
        #expect(storeServe.status == 78, "\(storeServe)")
        #expect(
            storeServe.stderr.contains(
                "store.path: the token store \(directory.path)/a.store is in use by another bearerd (pid \(daemon.pid)): give this config a store of its own"
            ),
            "\(storeServe.stderr)"
        )
        let portOnly = try Self.config(directory, name: "d.yaml", port: port, socket: "d.sock", store: "d.store")
        let portServe = try await BearerdProcess.run(["serve", "-c", portOnly])
        #expect(portServe.status != 0)
        #expect(
            portServe.stderr.contains("listen: 127.0.0.1:\(port) is in use by another program"),
            "\(portServe.stderr)"
        )
        #expect(!portServe.stderr.contains("bind(descriptor"), "\(portServe.stderr)")
    }

    /// /proc/net/tcp says its size is 0, and Foundation then reads one page of it: on a busy
    /// machine the listener sought was past the first 4 KiB, and its holder went unnamed.
    @Test func aListenerPastTheFirstPageOfTheSocketTableIsFound() throws {
        var sockets: [Int32] = []
        defer { for descriptor in sockets { close(descriptor) } }
        var port = 0
        for _ in 0..<60 {
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            sockets.append(descriptor)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
            }
            #expect(listen(descriptor, 1) == 0)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
            }
            port = Int(UInt16(bigEndian: address.sin_port))
        }
        #expect((HeldResources.read("/proc/net/tcp")?.count ?? 0) > 60 * 100)
        #expect(HeldResources.listeners(port: port) == [getpid()])
    }

    @Test(arguments: [
        (["bearerd", "serve", "--config", "/etc/x.yaml"], "/etc/x.yaml"),
        (["bearerd", "serve", "-c", "/etc/x.yaml"], "/etc/x.yaml"),
        (["bearerd", "serve", "--config=/etc/x.yaml"], "/etc/x.yaml"),
        (["bearerd", "serve", "--instance", "api"], "/etc/bearerd/api.yaml"),
        (["bearerd", "serve"], "/etc/bearerd/bearerd.yaml"),
    ])
    func theConfigADaemonReadsIsToldFromItsCommandLine(arguments: [String], path: String) {
        #expect(HeldResources.configPath(arguments: arguments, environment: [:]) == path)
        #expect(HeldResources.configPath(arguments: ["bearerd", "serve"], environment: nil) == nil)
    }
}

/// `status --all` lists a daemon started by hand beside the units, asked over its own socket.
@Suite(
    "status --all: daemons started by hand",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(1))
)
struct HandStartedStatusTests {
    @Test func aDaemonStartedByHandIsListedWithItsConfigAndState() async throws {
        let directory = try TemporaryDirectory()
        let units = try TemporaryDirectory()
        _ = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let config = try HeldResourcesTests.config(
            directory,
            name: "by-hand.yaml",
            port: try HeldResourcesTests.freePort(),
            socket: "admin.sock",
            store: "tokens.store"
        )
        let daemon = try BearerdProcess(["serve", "--config", config])
        defer { daemon.signal(SIGTERM) }
        try await daemon.waitUntilReady()
        let rows = await InstanceStatus.rows(in: units.path)
        let row = try #require(rows.first { $0.unit == "pid \(daemon.pid) (by hand) \(config)" }, "\(rows)")
        // Its token server is down: the daemon answers, and says it is waiting.
        #expect(!row.state.hasPrefix("not") && !row.state.hasPrefix("no answer"), "\(row)")
        #expect(InstanceStatus.render(rows).contains("pid \(daemon.pid) (by hand)"))
    }

    /// A process called bearerd whose config is a FIFO (anyone can start one): listed, never
    /// read, and `status --all` does not wait on it.
    @Test func aConfigThatIsNotAFileIsNotRead() async throws {
        let directory = try TemporaryDirectory()
        let units = try TemporaryDirectory()
        let fifo = directory.path + "/fifo.yaml"
        #expect(mkfifo(fifo, 0o600) == 0)
        let stuck = try BearerdProcess(["serve", "--config", fifo])
        defer { stuck.signal(SIGKILL) }
        try await waitUntil(.seconds(5), every: .milliseconds(20)) {
            (try? String(contentsOfFile: "/proc/\(stuck.pid)/cmdline", encoding: .utf8))?.contains("fifo.yaml") == true
        }
        let rows = await InstanceStatus.rows(in: units.path)
        let row = try #require(rows.first { $0.unit.hasPrefix("pid \(stuck.pid) ") }, "\(rows)")
        #expect(row.state == "not asked: its config \(fifo) is not a regular file", "\(row)")
    }

    @Test(arguments: [
        ("/var/lib/bearerd/tokens.store", true), ("/var/lib/bearerd@work/tokens.store", true),
        ("/var/lib/bearerd@../tokens.store", false), ("/home/alice/tokens.store", false),
        ("/var/lib/bearerd/other.store", false),
    ])
    func theUnitsStateDirectoryIsKnown(path: String, isUnits: Bool) {
        #expect(StartupChecks.isUnitsStateDirectory(path) == isUnits)
    }
}
