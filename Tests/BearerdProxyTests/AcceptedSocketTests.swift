import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// What the kernel holds for a connection bearerd accepted, read from this process's own file
/// descriptors (the proxy runs in it).
@Suite("Accepted sockets")
struct AcceptedSocketTests {
    /// TCP_NODELAY, which NIO's ServerBootstrap sets on the listener, is inherited by each
    /// accepted socket (Linux) rather than set again per connection: without it a response
    /// written in parts waits for the client's delayed acknowledgement (40 ms) before its second.
    @Test func anAcceptedConnectionHasNoDelaySet() async throws {
        try await ProxyFixture.with { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                let answer = try await client.send(.GET, "/x")
                #expect(answer.status == 200)
                let accepted = Self.acceptedSockets(localPort: proxy.port)
                #expect(accepted.count == 1, "\(accepted)")
                for descriptor in accepted {
                    var value: Int32 = 0
                    var size = socklen_t(MemoryLayout<Int32>.size)
                    #expect(getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &size) == 0)
                    #expect(value == 1, "TCP_NODELAY is not set on the accepted socket")
                }
            }
        }
    }

    /// This process's connected IPv4 sockets whose local port is `localPort`.
    static func acceptedSockets(localPort: Int) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { descriptor in
            var local = sockaddr_in()
            var peer = sockaddr_in()
            var size = socklen_t(MemoryLayout<sockaddr_in>.size)
            let named = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &size) }
            }
            guard named == 0, local.sin_family == sa_family_t(AF_INET),
                Int(UInt16(bigEndian: local.sin_port)) == localPort
            else { return false }
            size = socklen_t(MemoryLayout<sockaddr_in>.size)
            return withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getpeername(descriptor, $0, &size) }
            } == 0
        }
    }
}
