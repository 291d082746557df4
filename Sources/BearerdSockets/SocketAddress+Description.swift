import NIOCore

extension SocketAddress {
    /// `127.0.0.1:8080`, `[::1]:8080` or `unix:/path`.
    package var bearerdDescription: String {
        switch self {
        case .v4(let address): "\(address.host):\(self.port ?? 0)"
        case .v6(let address): "[\(address.host)]:\(self.port ?? 0)"
        case .unixDomainSocket: "unix:\(self.pathname ?? "")"
        }
    }
}
