import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOHTTP1

/// Case-insensitive header-name checks on UTF-8 bytes, without lowercasing (no allocation per header).
enum HeaderName {
    /// Whether `name` equals `lowercase`, which must be lowercase ASCII.
    @inline(__always)
    static func equals(_ name: String, _ lowercase: StaticString) -> Bool {
        let count = lowercase.utf8CodeUnitCount
        guard name.utf8.count == count else { return false }
        return lowercase.withUTF8Buffer { expected in
            var index = 0
            for byte in name.utf8 {
                if byte | 0x20 != expected[index] { return false }
                index += 1
            }
            return true
        }
    }

    /// Headers that apply to one connection only (RFC 9110 §7.6.1), plus the legacy
    /// `Proxy-Connection`. They never cross the proxy in either direction.
    static func isHopByHop(_ name: String) -> Bool {
        switch name.utf8.count {
        case 2: return equals(name, "te")
        case 7: return equals(name, "trailer") || equals(name, "upgrade")
        case 10: return equals(name, "connection") || equals(name, "keep-alive")
        case 16: return equals(name, "proxy-connection")
        case 17: return equals(name, "transfer-encoding")
        case 18: return equals(name, "proxy-authenticate")
        case 19: return equals(name, "proxy-authorization")
        default: return false
        }
    }

    /// The header names a message's `Connection` header lists beyond the usual `keep-alive` and
    /// `close` (which name no header), or `[]`. Most messages carry only those two, so the common
    /// case costs one look at the `Connection` values and no splitting.
    static func extraConnectionOptions(_ headers: HTTPHeaders) -> [Substring] {
        var plain = true
        for (name, value) in headers where Self.equals(name, "connection") {
            if !(Self.equals(value, "keep-alive") || Self.equals(value, "close")) { plain = false }
        }
        if plain { return [] }
        return headers[canonicalForm: "connection"].filter { option in
            !(Self.equals(String(option), "keep-alive") || Self.equals(String(option), "close"))
        }
    }

    /// Whether `name` is one of `options`, the header names a `Connection` header listed
    /// (NIO's `headers[canonicalForm: "connection"]`); those are hop-by-hop too.
    static func isListed(_ name: String, in options: [Substring]) -> Bool {
        options.contains { option in
            option.utf8.count == name.utf8.count && zip(option.utf8, name.utf8).allSatisfy { $0 | 0x20 == $1 | 0x20 }
        }
    }
}
