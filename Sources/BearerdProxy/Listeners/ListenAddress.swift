import BearerdWire

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where bearerd accepts connections: `127.0.0.1:PORT`, `[::1]:PORT`, `localhost:PORT` or
/// `unix:/ABSOLUTE/PATH`.
package enum ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// A TCP address; `host` is an IP literal (IPv6 without brackets).
    case tcp(host: String, port: Int)
    /// A unix domain socket.
    case unix(path: String)

    /// The longest path a unix socket may have: `sun_path` less its terminating NUL (107 bytes
    /// on Linux, 103 on macOS).
    package static let maxUnixPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Parses one `listen` entry.
    /// - Returns: the address, or a message saying what form is expected.
    package static func parse(_ text: String) -> Parsed<ListenAddress> {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            guard path.hasPrefix("/") else {
                return .refused("a unix socket path must be absolute (got \"\(text)\")")
            }
            guard path.utf8.count <= Self.maxUnixPathLength else {
                return .refused(
                    "unix:\(path) is longer than a unix socket path may be (\(Self.maxUnixPathLength) bytes, got \(path.utf8.count)); choose a shorter path"
                )
            }
            return .parsed(.unix(path: path))
        }
        guard let colon = text.lastIndex(of: ":") else {
            return .refused("expected HOST:PORT or unix:PATH (got \"\(text)\")")
        }
        var host = String(text[..<colon])
        let portText = text[text.index(after: colon)...]
        guard let port = Int(portText), (0...65535).contains(port) else {
            return .refused("the port must be a number from 0 to 65535 (got \"\(text)\")")
        }
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
            guard Self.isIPv6(host) else { return .refused("\"\(host)\" is not an IPv6 address") }
            return .parsed(.tcp(host: host, port: port))
        }
        if host == "localhost" { return .parsed(.tcp(host: "127.0.0.1", port: port)) }
        guard Self.isIPv4(host) else {
            return .refused(
                "the host must be an IP address, \"localhost\" or [IPv6] (got \"\(host)\"); bearerd does not resolve names to listen on"
            )
        }
        return .parsed(.tcp(host: host, port: port))
    }

    /// Whether only processes on this machine can reach the address.
    package var isLoopback: Bool {
        switch self {
        case .unix: return true
        case .tcp(let host, _):
            // 127.0.0.0/8, ::1, and 127.0.0.0/8 written as IPv4-mapped IPv6 (::ffff:127.0.0.1).
            guard let bytes = Self.addressBytes(host) else { return false }
            return bytes.count == 4 ? bytes[0] == 127 : bytes == [UInt8](repeating: 0, count: 15) + [1]
        }
    }

    /// Whether binding both would collide (the second bind fails with EADDRINUSE): one path
    /// however written (`.`, `..`, repeated slashes); one IP however written (`0:0:0:0:0:0:0:1`
    /// is `::1`, `::ffff:127.0.0.1` is `127.0.0.1`) on one port; or a wildcard (`0.0.0.0`, and
    /// `::`, which takes IPv4 too) and any address of its family on its port. Port 0 is a new
    /// port for each listener: it collides with nothing.
    package func collides(with other: ListenAddress) -> Bool {
        switch (self, other) {
        case (.unix(let first), .unix(let second)):
            return Self.normalPath(first) == Self.normalPath(second)
        case (.tcp(let firstHost, let firstPort), .tcp(let secondHost, let secondPort)):
            guard firstPort == secondPort, firstPort != 0, let first = Self.addressBytes(firstHost),
                let second = Self.addressBytes(secondHost)
            else { return false }
            if first == second { return true }
            func wildcardCovers(_ wildcard: [UInt8], _ address: [UInt8]) -> Bool {
                wildcard.allSatisfy { $0 == 0 } && (wildcard.count == address.count || wildcard.count == 16)
            }
            return wildcardCovers(first, second) || wildcardCovers(second, first)
        case (.unix, .tcp), (.tcp, .unix):
            return false
        }
    }

    /// The address's bytes: 4 for IPv4 (an IPv4-mapped IPv6 address folded to its IPv4), 16 for
    /// IPv6.
    static func addressBytes(_ host: String) -> [UInt8]? {
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, host, &v4) == 1 { return v4 }
        var v6 = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return nil }
        if v6[0..<10].allSatisfy({ $0 == 0 }) && v6[10] == 0xff && v6[11] == 0xff { return Array(v6[12...]) }
        return v6
    }

    /// An absolute `path` with `.`, `..` and repeated slashes resolved (symbolic links are not:
    /// the file may not exist yet).
    package static func normalPath(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..": _ = parts.popLast()
            default: parts.append(part)
            }
        }
        return "/" + parts.joined(separator: "/")
    }

    package var description: String {
        switch self {
        case .unix(let path): "unix:\(path)"
        case .tcp(let host, let port): host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        }
    }

    static func isIPv4(_ text: String) -> Bool {
        // Bytes rather than `in_addr()`: NIO's C module declares the type too, and which one a
        // release build resolves the initializer to is not this file's to choose.
        var address = [UInt8](repeating: 0, count: 4)
        return inet_pton(AF_INET, text, &address) == 1
    }

    static func isIPv6(_ text: String) -> Bool {
        var address = [UInt8](repeating: 0, count: 16)
        return inet_pton(AF_INET6, text, &address) == 1
    }
}
