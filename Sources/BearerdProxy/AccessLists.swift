import BearerdConfig
import Foundation
import NIOHTTP1

/// Which methods and paths may be forwarded with the token, like kubectl proxy's
/// `--accept-paths`/`--reject-paths`/`--reject-methods`: `proxy.allow_methods`,
/// `proxy.deny_methods`, `proxy.allow_paths`, `proxy.deny_paths`. A deny entry wins over an allow
/// entry; an empty allow list allows everything.
struct AccessLists: Sendable {
    let allowMethods: Set<String>
    let denyMethods: Set<String>
    let allowPaths: [String]
    let denyPaths: [String]

    init(_ proxy: BearerdConfiguration.Proxy) {
        self.allowMethods = proxy.allowMethods
        self.denyMethods = proxy.denyMethods
        self.allowPaths = proxy.allowPaths
        self.denyPaths = proxy.denyPaths
    }

    var isEmpty: Bool {
        self.allowMethods.isEmpty && self.denyMethods.isEmpty && self.allowPaths.isEmpty && self.denyPaths.isEmpty
    }

    /// Why `method uri` may not be forwarded, or `nil`.
    func refusal(method: HTTPMethod, uri: String) -> String? {
        guard !self.isEmpty else { return nil }
        let name = method.rawValue
        if self.denyMethods.contains(name) || (!self.allowMethods.isEmpty && !self.allowMethods.contains(name)) {
            return "\(name) is not allowed here (proxy.allow_methods, proxy.deny_methods)"
        }
        // Compared decoded, so that /adm%69n is /admin; dot segments were refused already.
        let raw = uri.prefix { $0 != "?" && $0 != "#" }
        let path = String(raw).removingPercentEncoding ?? String(raw)
        if self.denyPaths.contains(where: { Self.covers($0, path) })
            || (!self.allowPaths.isEmpty && !self.allowPaths.contains(where: { Self.covers($0, path) }))
        {
            return "this path is not allowed here (proxy.allow_paths, proxy.deny_paths)"
        }
        return nil
    }

    /// Whether `prefix` covers `path` by whole segments: `/api/` covers `/api/x`; `/admin`
    /// covers `/admin` and `/admin/x` but not `/administrator`.
    static func covers(_ prefix: String, _ path: String) -> Bool {
        guard path.hasPrefix(prefix) else { return false }
        return prefix.hasSuffix("/") || path.utf8.count == prefix.utf8.count
            || path.utf8.dropFirst(prefix.utf8.count).first == UInt8(ascii: "/")
    }
}
