/// Plain `http://` carries the token, the client secret and the refresh token readable by
/// anyone on the path, so bearerd uses it only to this machine, unless `allow_insecure_http`.
package enum PlainHTTP {
    /// Whether `host` (a URL's host, brackets allowed) can only be this machine.
    package static func isLoopback(host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127"
            && parts.allSatisfy { part in part.utf8.count <= 3 && UInt8(part).map { _ in true } ?? false }
    }

    /// Why `url` may not be used, or `nil`: an `http://` URL to a host other than this machine,
    /// when insecure http is not allowed.
    package static func refusal(url: String, allowInsecure: Bool) -> String? {
        guard !allowInsecure, url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        let hostAndPort = authority.split(separator: "@").last.map(String.init) ?? ""
        let host: String
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            host = String(hostAndPort[...close])
        } else {
            host = String(hostAndPort.prefix { $0 != ":" })
        }
        guard !Self.isLoopback(host: host) else { return nil }
        return
            "is plain http to \(host), another machine: tokens and secrets would cross the network readable; use https, or set allow_insecure_http: true"
    }
}
