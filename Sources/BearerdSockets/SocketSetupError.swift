import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// Why a socket cannot be put in place or listened on: the config key at fault and what to do.
package struct SocketSetupError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { self.message }

    /// A failed bind of `address` (as the config writes it), in words, naming `key`:
    /// "listen: 127.0.0.1:8080 is in use by another program: …", not NIO's
    /// "bind(descriptor:ptr:bytes:): Address already in use (errno: 98)".
    package static func bind(_ error: any Error, key: String, address: String) -> Self {
        guard let io = error as? IOError else { return Self("\(key): cannot listen on \(address): \(error)") }
        switch io.errnoCode {
        case EADDRINUSE:
            return Self(
                "\(key): \(address) is in use by another program (another bearerd with the same \(key)?): choose another address for \(key), or stop that program (`ss -ltnp` names it; `bearerd check-config` run as root does too)"
            )
        case EACCES:
            return Self(
                "\(key): \(address): permission denied: a port below 1024 needs root or CAP_NET_BIND_SERVICE; choose a port above 1023"
            )
        case EADDRNOTAVAIL:
            return Self("\(key): \(address) is not an address of this machine: use 127.0.0.1 or ::1")
        default:
            return Self("\(key): cannot listen on \(address): \(String(cString: strerror(io.errnoCode)))")
        }
    }
}
