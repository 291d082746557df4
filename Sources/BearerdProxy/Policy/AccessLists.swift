import BearerdWire

/// Which methods and paths may be forwarded with the token, like kubectl proxy's
/// `--accept-paths`/`--reject-paths`/`--reject-methods`: `proxy.allow_methods`,
/// `proxy.deny_methods`, `proxy.allow_paths`, `proxy.deny_paths`. A deny entry wins over an allow
/// entry; an empty allow list allows everything.
///
/// Paths are compared as the upstream may route them (``RoutedPath``): a deny entry refuses a
/// path if it covers any of its routed forms (`/users/%40me` is `/users/@me` to most frameworks,
/// `/admin;x=1/users` is `/admin/users` to Tomcat), with or without the entry's final slash
/// (`/admin/` also refuses `/admin`, which Express and Spring serve alike); an allow entry must
/// cover every routed form.
struct AccessLists: Sendable {
    let allowMethods: Set<String>
    let denyMethods: Set<String>
    /// Every form of every `proxy.allow_paths` entry.
    let allowPaths: [String]
    /// Every form of every `proxy.deny_paths` entry, without a final slash.
    let denyPaths: [String]
    let allowPathParams: Bool

    init(_ proxy: ProxyOptions) {
        self.init(
            allowMethods: proxy.allowMethods,
            denyMethods: proxy.denyMethods,
            allowPaths: proxy.allowPaths,
            denyPaths: proxy.denyPaths,
            allowPathParams: proxy.allowPathParams
        )
    }

    /// From the config's lists, whose paths are canonical (``CanonicalTarget``).
    init(
        allowMethods: Set<String> = [],
        denyMethods: Set<String> = [],
        allowPaths: [String],
        denyPaths: [String],
        allowPathParams: Bool
    ) {
        self.allowMethods = allowMethods
        self.denyMethods = denyMethods
        self.allowPathParams = allowPathParams
        self.allowPaths = allowPaths.flatMap { RoutedPath.forms(of: $0, allowPathParams: allowPathParams) }
        self.denyPaths = denyPaths.flatMap { RoutedPath.forms(of: $0, allowPathParams: allowPathParams) }
            .map { $0.count > 1 && $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    var isEmpty: Bool {
        self.allowMethods.isEmpty && self.denyMethods.isEmpty && self.allowPaths.isEmpty && self.denyPaths.isEmpty
    }

    /// Why `method path` may not be forwarded, or `nil`. `path` is canonical (``CanonicalTarget``),
    /// as the listed paths are. A deny entry matches in any letter case, since some upstreams
    /// route without regard to case; an allow entry only as written.
    func refusal(method: RequestMethod, path: String) -> String? {
        guard !self.isEmpty else { return nil }
        let name = method.rawValue.uppercased()
        if self.denyMethods.contains(name) || (!self.allowMethods.isEmpty && !self.allowMethods.contains(name)) {
            return "\(name) is not allowed here (proxy.allow_methods, proxy.deny_methods)"
        }
        let forms = RoutedPath.forms(of: path, allowPathParams: self.allowPathParams)
        let routed = forms.count == 1 ? forms : Array(forms.dropFirst())
        let denied = RoutedPath.denyVariants(of: forms).contains { form in
            self.denyPaths.contains { Self.covers($0, form, anyCase: true) }
        }
        let allowed =
            self.allowPaths.isEmpty
            || routed.allSatisfy { form in self.allowPaths.contains { Self.covers($0, form, anyCase: false) } }
        if denied || !allowed {
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
