import NIOCore

/// The DNS-rebinding guard (`proxy.rebinding_guard`).
///
/// A web page can make its own host name resolve to 127.0.0.1 and then send requests to bearerd
/// that its browser treats as same-origin, so they carry no `Origin` header. They still carry
/// the page's name in `Host`. A TCP request is forwarded only when `Host` names the listener:
/// `127.0.0.1`, `localhost`, `[::1]` or the address the client connected to, at the listener's
/// port, or a name from `proxy.allowed_hosts`. The port may be left out only for port 80, as
/// clients do. Unix-socket listeners are not checked: browsers cannot reach them.
package struct HostGuard: Sendable {
    /// `proxy.allowed_hosts`: `name` (at the listener's port) or `name:port`, lower case.
    package var allowedHosts: Set<String>

    package init(allowedHosts: Set<String>) {
        self.allowedHosts = allowedHosts
    }

    /// Whether `host`, a `Host` value whose characters were already checked, names the listener
    /// the client connected to at `local`.
    package func permits(_ host: String, local: SocketAddress) -> Bool {
        guard let listenerPort = local.port else { return true }
        let host = host.lowercased()
        let (name, port) = Self.split(host)
        if port != nil, self.allowedHosts.contains(host) { return true }
        guard port.map({ $0 == listenerPort }) ?? (listenerPort == 80) else { return false }
        switch name {
        case "127.0.0.1", "localhost", "[::1]":
            return true
        default:
            if self.allowedHosts.contains(String(name)) { return true }
            guard let ownAddress = local.ipAddress else { return false }
            // An address literal cannot be rebound: the one the client connected to is ours.
            if case .v6 = local { return name == "[\(ownAddress)]" }
            return name == ownAddress
        }
    }

    /// `name` and `port` of `name[:port]` or `[v6][:port]`; `port` is `nil` when absent, and -1
    /// when not a number, which matches no listener.
    /// Works on the UTF-8 bytes (a `Host` value is ASCII once checked): it runs for every
    /// request, and a search by `Character` pays for grapheme breaking at every step.
    static func split(_ host: String) -> (name: Substring, port: Int?) {
        let bytes = host.utf8
        guard let colon = bytes.lastIndex(of: UInt8(ascii: ":")), bytes.last != UInt8(ascii: "]") else {
            return (host[...], nil)
        }
        if bytes.first == UInt8(ascii: "["),
            colon == bytes.startIndex || bytes[bytes.index(before: colon)] != UInt8(ascii: "]")
        {
            return (host[...], -1)
        }
        return (host[..<colon], Int(host[bytes.index(after: colon)...]) ?? -1)
    }
}
