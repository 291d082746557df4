import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SocketAddress {
    /// The address of the unix socket at `path`, as long as `sun_path` allows (107 bytes on
    /// Linux): NIO's `init(unixDomainSocketPath:)` stops at 103, macOS's limit, everywhere.
    package static func unixSocket(_ path: String) throws -> SocketAddress {
        var address = sockaddr_un()
        guard path.utf8.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SocketAddressError.unixDomainSocketPathTooLong
        }
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in path.utf8.enumerated() { raw[offset] = byte }
        }
        return SocketAddress(address)
    }
}
