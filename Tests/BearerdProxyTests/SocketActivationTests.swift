import BearerdAuth
import BearerdConfig
import BearerdTestSupport
import Logging
import NIOCore
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
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        listen(descriptor, 16)
        return descriptor
    }

    @Test(arguments: [("0.0.0.0", false, false), ("127.0.0.1", false, true), ("0.0.0.0", true, true)])
    func aPassedSocketMustBeLoopbackUnlessAllowRemote(host: String, allowRemote: Bool, accepted: Bool) async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let settings = try HeaderRewriterTests.settings()
        let descriptor = Self.listening(on: host)
        do {
            let listeners = try await ProxyListeners.bind(
                listen: [],
                passed: [descriptor],
                allowRemote: allowRemote,
                socketMode: 0o600,
                socketGroup: nil,
                settings: settings,
                tokens: RecordingTokenProvider(token: "t"),
                group: group,
                logger: Logger(label: "test")
            )
            #expect(accepted, "a passed socket on \(host) was served")
            await listeners.shutdown(grace: .zero)
        } catch {
            #expect(!accepted, "\(error)")
            #expect("\(error)".contains("allow_remote"))
        }
        try await group.shutdownGracefully()
    }
}
