import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// systemd's notification socket (`sd_notify(3)`): `$NOTIFY_SOCKET`, a unix datagram socket,
/// a path or (with a leading `@`) a name in the abstract namespace.
package struct NotifySocket: Sendable {
    package let path: String

    /// The socket systemd named, or `nil` when bearerd does not run under `Type=notify`.
    package init?(environment: [String: String]) {
        guard let path = environment["NOTIFY_SOCKET"], !path.isEmpty,
            path.hasPrefix("/") || path.hasPrefix("@"), path.utf8.count < 108
        else { return nil }
        self.path = path
    }

    /// Sends one message (`KEY=VALUE` lines). Returns whether the datagram left.
    @discardableResult
    package func send(_ message: String) -> Bool {
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes = Array(self.path.utf8)
        if bytes.first == UInt8(ascii: "@") { bytes[0] = 0 }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in bytes.enumerated() { raw[offset] = byte }
        }
        // An abstract name's length is exact; a path's includes nothing past it either.
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count)
        let payload = Array(message.utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                payload.withUnsafeBytes { buffer in
                    sendto(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), socketAddress, length)
                }
            }
        }
        return sent == payload.count
    }

    /// `CLOCK_MONOTONIC` in microseconds, for `MONOTONIC_USEC=` with `RELOADING=1`.
    package static func monotonicMicroseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000 + UInt64(now.tv_nsec) / 1000
    }
}
