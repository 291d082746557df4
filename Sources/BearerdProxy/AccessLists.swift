import BearerdConfig
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

    /// Why `method path` may not be forwarded, or `nil`. `path` is canonical (``CanonicalTarget``),
    /// as the listed paths are. A deny entry matches in any letter case, since some upstreams
    /// route without regard to case; an allow entry only as written.
    func refusal(method: HTTPMethod, path: String) -> String? {
        guard !self.isEmpty else { return nil }
        let name = method.rawValue.uppercased()
        if self.denyMethods.contains(name) || (!self.allowMethods.isEmpty && !self.allowMethods.contains(name)) {
            return "\(name) is not allowed here (proxy.allow_methods, proxy.deny_methods)"
        }
        if self.denyPaths.contains(where: { Self.covers($0, path, anyCase: true) })
            || (!self.allowPaths.isEmpty && !self.allowPaths.contains(where: { Self.covers($0, path, anyCase: false) }))
        {
            return "this path is not allowed here (proxy.allow_paths, proxy.deny_paths)"
        }
        return nil
    }

    /// Whether `prefix` covers `path` by whole segments: `/api/` covers `/api/x`; `/admin`
    /// covers `/admin` and `/admin/x` but not `/administrator`.
    static func covers(_ prefix: String, _ path: String, anyCase: Bool) -> Bool {
        let prefixBytes = prefix.utf8
        let pathBytes = path.utf8
        guard pathBytes.count >= prefixBytes.count else { return false }
        let head = pathBytes.prefix(prefixBytes.count)
        let same =
            anyCase
            ? zip(head, prefixBytes).allSatisfy { Self.folded($0) == Self.folded($1) }
            : head.elementsEqual(prefixBytes)
        guard same else { return false }
        return prefixBytes.last == UInt8(ascii: "/") || pathBytes.count == prefixBytes.count
            || pathBytes.dropFirst(prefixBytes.count).first == UInt8(ascii: "/")
    }

    private static func folded(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte | 0x20 : byte
    }
}
