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
            if Self.isIPv4(host) { return host.hasPrefix("127.") }
            return host == "::1" || host == "0:0:0:0:0:0:0:1"
        }
    }

    /// What two addresses that bind the same socket have in common: the IP in its one written
    /// form (`0:0:0:0:0:0:0:1` is `::1`) with the port, or the path with `.`, `..` and repeated
    /// slashes resolved. `nil` for port 0: each such listener gets a port of its own.
    package var bindingKey: String? {
        switch self {
        case .unix(let path):
            return "unix:" + Self.normalPath(path)
        case .tcp(_, 0):
            return nil
        case .tcp(let host, let port):
            let family = Self.isIPv4(host) ? AF_INET : AF_INET6
            var address = [UInt8](repeating: 0, count: 16)
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_pton(family, host, &address) == 1,
                inet_ntop(family, address, &text, socklen_t(text.count)) != nil
            else { return "\(self)" }
            let canonical = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            return "\(family == AF_INET6 ? "[\(canonical)]" : canonical):\(port)"
        }
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
