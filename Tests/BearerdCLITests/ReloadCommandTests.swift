import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `bearerd reload` (systemd's `ExecReload=`) returns only once the new config is live (exit 0)
/// or refused (non-zero, the reason printed), while a refused config leaves the old one serving.
@Suite("bearerd reload", .serialized, .timeLimit(.minutes(2)))
struct ReloadCommandTests {
    @Test func saysWhetherTheNewConfigIsLive() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let first = try await TestUpstream.start(group: group) { _ in .ok("first") }
        let second = try await TestUpstream.start(group: group) { _ in .ok("second") }
        let directory = try TemporaryDirectory()
        let notify = try NotifyListener(directory: directory.path)
        let token = try directory.write("reload-token-7070\n", to: "token")
        let path = try directory.write(
            ReloadTests.config(upstream: first.port, listen: ["127.0.0.1:0"], token: token),
            to: "b.yaml"
        )
        // Nothing runs yet: nothing to reload, and it says so.
        let none = try await BearerdProcess.run(["reload", "-c", path])
        #expect(none.status == 1)
        #expect(none.stderr.contains("no daemon answers"), "\(none.stderr)")

        let bearerd = try BearerdProcess(["serve", "-c", path], environment: ["NOTIFY_SOCKET": notify.path])
        try await waitUntil { notify.messages.contains { $0.hasPrefix("READY=1") } }
        // The datagram can overtake standard error, whose `listening` line names the port.
        try await waitUntil { bearerd.stderr.contains("msg=listening") }
        let port = try #require(bearerd.proxyPort)
        func answer() async throws -> String {
            try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) {
                try await $0.send(.GET, "/x")
            }.bodyText
        }
        #expect(try await answer() == "first")

        // A valid config: live when the command returns.
        try ReloadTests.config(upstream: second.port, listen: ["127.0.0.1:0"], token: token)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let applied = try await BearerdProcess.run(["reload", "-c", path])
        #expect(applied.status == 0, "\(applied.stderr)")
        #expect(applied.stdout.contains("reloaded: the new config is live"))
        #expect(try await answer() == "second", "the new upstream serves as soon as reload returned")

        // A broken config: refused with the key at fault, and the running config serves on.
        try "upstream:\n  url: nope\n".write(toFile: path, atomically: true, encoding: .utf8)
        let refused = try await BearerdProcess.run(["reload", "-c", path])
        #expect(refused.status == 78)
        #expect(refused.stderr.contains("the config is refused; the running one keeps serving"), "\(refused.stderr)")
        #expect(refused.stderr.contains("upstream.url"), "\(refused.stderr)")
        #expect(try await answer() == "second")

        // A config only the daemon can refuse (a listener it cannot bind): its reason comes back.
        let busy = try await ServerBootstrap(group: group).bind(host: "127.0.0.1", port: 0).get()
        let busyPort = try #require(busy.localAddress?.port)
        try ReloadTests.config(
            upstream: second.port,
            listen: ["127.0.0.1:0", "127.0.0.1:\(busyPort)"],
            token: token
        )
        .write(toFile: path, atomically: true, encoding: .utf8)
        let unbindable = try await BearerdProcess.run(["reload", "-c", path])
        #expect(unbindable.status == 1, "valid, but not applied: not a config error")
        #expect(unbindable.stderr.contains("cannot apply the new config"), "\(unbindable.stderr)")
        #expect(try await answer() == "second")
        try await busy.close().get()

        // A change that waits for a restart is live for the rest and says which key waits.
        let other = try directory.write("another-token-7171\n", to: "other-token")
        try ReloadTests.config(upstream: second.port, listen: ["127.0.0.1:0"], token: other)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let pending = try await BearerdProcess.run(["reload", "-c", path])
        #expect(pending.status == 75, "not all of it applies: not a success")
        let firstLine = pending.stdout.split(separator: "\n").first.map(String.init) ?? ""
        #expect(firstLine.hasPrefix("reloaded in part: auth.static_token_file wait for a restart"), "\(pending.stdout)")
        #expect(!firstLine.contains("is live,"), "\(pending.stdout)")

        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        for output in [none, applied, refused, unbindable, pending] {
            #expect(!output.stdout.contains("reload-token-7070") && !output.stderr.contains("reload-token-7070"))
        }
        let reloads = notify.messages.filter { $0.hasPrefix("RELOADING=1\nMONOTONIC_USEC=") }.count
        #expect(reloads == 3, "systemd hears RELOADING=1 for each reload the daemon ran")
        await first.stop()
        await second.stop()
        try await group.shutdownGracefully()
    }
}
