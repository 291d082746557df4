import BearerdAuth
import BearerdConfig
import BearerdSockets
import BearerdTestSupport
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import BearerdProxy

#if canImport(Glibc)
import Glibc
#endif

/// Sockets systemd passes get the same loopback check as the config's `listen` addresses.
@Suite("Socket activation")
struct SocketActivationTests {
    /// A listening TCP socket on `host`, as systemd would pass it.
    static func listening(on host: String) -> Int32 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        // NIO's address, not a sockaddr_in of our own: in a clean build the struct resolved to
        // CNIOLinux's copy, which this target does not import.
        let address = try! SocketAddress(ipAddress: host, port: 0)
        _ = address.withSockAddr { pointer, size in bind(descriptor, pointer, socklen_t(size)) }
        listen(descriptor, 16)
        return descriptor
    }

    /// A passed socket on another address needs allow_remote, and socket_allow_any_user with it:
    /// its callers on other hosts have no local uid for the lists.
    @Test(arguments: [
        ("0.0.0.0", false, false, false), ("127.0.0.1", false, false, true), ("0.0.0.0", true, true, true),
        ("0.0.0.0", true, false, false),
    ])
    func aPassedSocketMustBeLoopbackUnlessAllowRemote(
        host: String,
        allowRemote: Bool,
        anyUser: Bool,
        accepted: Bool
    ) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        var settings = try HeaderRewriterTests.settings(anyUser ? "socket_allow_any_user: true\n" : "")
        settings.listeners.listen = []
        settings.listeners.allowRemote = allowRemote
        let descriptor = Self.listening(on: host)
        do {
            let listeners = try await ProxyListeners.bind(
                passed: [descriptor],
                settings: settings,
                tokens: RecordingTokenProvider(token: "t"),
                group: group,
                logger: Logger(label: "test")
            )
            #expect(accepted, "a passed socket on \(host) was served")
            await listeners.shutdown(grace: .zero)
        } catch {
            #expect(!accepted, "\(error)")
            #expect("\(error)".contains(allowRemote ? "socket_allow_any_user" : "allow_remote"))
        }
        try await group.shutdownGracefully()
    }
}

@Suite("Unix socket files")
struct UnixSocketFileTests {
    /// A directory every user may write and empty: the bound socket could be swapped for a
    /// symlink before bearerd sets its mode, which would then change another file's.
    @Test func aSocketInAWorldWritableDirectoryWithoutTheStickyBitIsRefused() async throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o777)
        await #expect {
            try await ProxyFixture.with(listen: ["unix:\(directory.path)/proxy.sock"]) { _ in }
        } throws: { error in
            "\(error)".contains("written and emptied by every user")
        }
        chmod(directory.path, 0o1777)
        try await ProxyFixture.with(listen: ["127.0.0.1:0", "unix:\(directory.path)/proxy.sock"]) { proxy in
            try await TestHTTPClient.withConnection(to: .unix(path: directory.path + "/proxy.sock"), group: proxy.group)
            {
                client in
                let answer = try await client.send(.GET, "/sticky-is-fine")
                #expect(answer.status == 200)
            }
        }
    }
}
