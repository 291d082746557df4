import Foundation

/// The one upstream bearerd forwards to, parsed from `upstream.url`.
public struct UpstreamTarget: Sendable, Hashable, CustomStringConvertible {
    /// `http` or `https`.
    public enum Scheme: String, Sendable, Hashable {
        case http, https
    }

    /// The scheme.
    public var scheme: Scheme
    /// The host: a DNS name or an IP literal (IPv6 without brackets).
    public var host: String
    /// The port, the scheme's default when the URL names none.
    public var port: Int
    /// The path prefix, without a trailing slash: `""` or e.g. `/v2`.
    public var basePath: String
    /// The `Host` header value sent upstream: the host, with the port when it is not the default.
    public var hostHeader: String

    /// Whether `host` is an IPv4 or IPv6 address rather than a DNS name (no SNI is sent for those).
    public var hostIsIPAddress: Bool {
        ListenAddress.isIPv4(self.host) || ListenAddress.isIPv6(self.host)
    }

    /// Parses `upstream.url`.
    public static func parse(_ text: String) -> Result<UpstreamTarget, ConfigIssueMessage> {
        guard let components = URLComponents(string: text), let schemeText = components.scheme?.lowercased(),
            let scheme = Scheme(rawValue: schemeText)
        else {
            return .failure("must be an http or https URL (got \"\(text)\")")
        }
        guard let rawHost = components.host, !rawHost.isEmpty else {
            return .failure("must name a host (got \"\(text)\")")
        }
        guard components.user == nil, components.password == nil else {
            return .failure("must not hold a user name or password; credentials come from auth.*")
        }
        guard components.query == nil, components.fragment == nil else {
            return .failure("must not have a query or fragment (got \"\(text)\")")
        }
        let host = rawHost.hasPrefix("[") ? String(rawHost.dropFirst().dropLast()) : rawHost
        let defaultPort = scheme == .https ? 443 : 80
        let port = components.port ?? defaultPort
        guard (1...65535).contains(port) else { return .failure("has an invalid port \(port)") }
        var basePath = components.percentEncodedPath
        while basePath.hasSuffix("/") { basePath.removeLast() }
        if !basePath.isEmpty && !basePath.hasPrefix("/") { basePath = "/" + basePath }
        let bracketedHost = host.contains(":") ? "[\(host)]" : host
        let hostHeader = port == defaultPort ? bracketedHost : "\(bracketedHost):\(port)"
        return .success(
            UpstreamTarget(scheme: scheme, host: host, port: port, basePath: basePath, hostHeader: hostHeader)
        )
    }

    /// The request target to send upstream for a client's origin-form target (`/path?query`):
    /// the base path joined to it with exactly one slash between them. Leading slashes of the
    /// client's target are collapsed to one, so `//host/x` can never read as an authority.
    public func join(_ requestTarget: String) -> String {
        let utf8 = requestTarget.utf8
        var rest = utf8.startIndex
        while rest != utf8.endIndex && utf8[rest] == UInt8(ascii: "/") { rest = utf8.index(after: rest) }
        if utf8.distance(from: utf8.startIndex, to: rest) == 1 {
            return self.basePath.isEmpty ? requestTarget : self.basePath + requestTarget
        }
        return self.basePath + "/" + String(requestTarget[rest...])
    }

    public var description: String {
        let defaultPort = self.scheme == .https ? 443 : 80
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let port = self.port == defaultPort ? "" : ":\(self.port)"
        return "\(self.scheme.rawValue)://\(host)\(port)\(self.basePath)"
    }
}
