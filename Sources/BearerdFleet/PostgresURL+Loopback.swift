import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension PostgresURL.Address {
    /// Whether `host` is this machine: `localhost`, or an address (not a name) in 127.0.0.0/8 or
    /// `::1` (also IPv4-mapped). Parsed, never a prefix: `127.db.corp` is a name on the network,
    /// and would otherwise be sent the password without TLS (`sslmode` defaults to disable only
    /// for a local database).
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" { return true }
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, host, &v6) == 1 else { return false }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        let loopback = bytes.prefix(15).allSatisfy { $0 == 0 } && bytes[15] == 1
        let mapped = bytes.prefix(10).allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF
        return loopback || (mapped && bytes[12] == 127)
    }
}
