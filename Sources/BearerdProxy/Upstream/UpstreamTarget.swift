import BearerdWire
import Foundation

/// The one upstream bearerd forwards to, parsed from `upstream.url`.
package struct UpstreamTarget: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    package enum Scheme: String, Sendable, Hashable {
        case http, https
    }

    /// The scheme.
    package var scheme: Scheme
    /// The host: a DNS name or an IP literal (IPv6 without brackets).
    package var host: String
    /// The port, the scheme's default when the URL names none.
    package var port: Int
    /// The path prefix, without a trailing slash: `""` or e.g. `/v2`. A client's canonical
    /// target goes upstream after it (``CanonicalTarget/joined(under:)``).
    package var basePath: String
    /// The `Host` header value sent upstream: the host, with the port when it is not the default.
    package var hostHeader: String

    /// Whether `host` is an IPv4 or IPv6 address rather than a DNS name (no SNI is sent for those).
    package var hostIsIPAddress: Bool {
        ListenAddress.isIPv4(self.host) || ListenAddress.isIPv6(self.host)
    }

    /// Parses `upstream.url`.
    package static func parse(_ text: String) -> Parsed<UpstreamTarget> {
        guard let components = URLComponents(string: text), let schemeText = components.scheme?.lowercased(),
            let scheme = Scheme(rawValue: schemeText)
        else {
            return .refused("must be an http or https URL (got \"\(text)\")")
        }
        // The host as it goes on the wire: an international name in its ASCII (xn--) form, which
        // DNS and the Host header take, never decoded to Unicode.
        guard let rawHost = components.encodedHost, !rawHost.isEmpty else {
            return .refused("must name a host (got \"\(text)\")")
        }
        guard !rawHost.contains("%") else {
            return .refused("must name its host without percent-encoding (got \"\(text)\")")
        }
        guard components.user == nil, components.password == nil else {
            return .refused("must not hold a user name or password; credentials come from auth.*")
        }
        guard components.query == nil, components.fragment == nil else {
            return .refused("must not have a query or fragment (got \"\(text)\")")
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let defaultPort = scheme == .https ? 443 : 80
        let port = components.port ?? defaultPort
        guard (1...65535).contains(port) else { return .refused("has an invalid port \(port)") }
        var basePath = components.percentEncodedPath
        if !basePath.isEmpty {
            switch CanonicalTarget.parse(basePath.hasPrefix("/") ? basePath : "/" + basePath, allowPathParams: true) {
            case .parsed(let canonical): basePath = canonical.path
            case .refused(let reason): return .refused("has a path bearerd cannot forward under: \(reason)")
            }
        }
        while basePath.hasSuffix("/") { basePath.removeLast() }
        let bracketedHost = host.contains(":") ? "[\(host)]" : host
        let hostHeader = port == defaultPort ? bracketedHost : "\(bracketedHost):\(port)"
        return .parsed(
            UpstreamTarget(scheme: scheme, host: host, port: port, basePath: basePath, hostHeader: hostHeader)
        )
    }

    package var description: String {
        let defaultPort = self.scheme == .https ? 443 : 80
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let port = self.port == defaultPort ? "" : ":\(self.port)"
        return "\(self.scheme.rawValue)://\(host)\(port)\(self.basePath)"
    }
}
