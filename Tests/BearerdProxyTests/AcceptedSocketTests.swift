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

    /// This process's connected IPv4 sockets whose local port is `localPort`. The addresses are
    /// read as bytes: in a clean build `sockaddr_in` resolves to CNIOLinux's copy, which this
    /// target does not import.
    static func acceptedSockets(localPort: Int) -> [Int32] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return names.compactMap(Int32.init).filter { descriptor in
            guard let local = Self.address(of: descriptor, getsockname), local.family == AF_INET,
                local.port == localPort
            else { return false }
            return Self.address(of: descriptor, getpeername) != nil
        }
    }

    /// The family and port of a socket's address, as `call` (getsockname, getpeername) gives it.
    static func address(
        of descriptor: Int32,
        _ call: (Int32, UnsafeMutablePointer<sockaddr>?, UnsafeMutablePointer<socklen_t>?) -> Int32
    ) -> (family: Int32, port: Int)? {
        var bytes = [UInt8](repeating: 0, count: 128)
        var size = socklen_t(bytes.count)
        let result = bytes.withUnsafeMutableBytes { raw in
            call(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &size)
        }
        guard result == 0, size >= 4 else { return nil }
        // sa_family in host order, then (for AF_INET) the port in network order.
        return (Int32(UInt16(bytes[0]) | UInt16(bytes[1]) << 8), Int(bytes[2]) << 8 | Int(bytes[3]))
    }
}
