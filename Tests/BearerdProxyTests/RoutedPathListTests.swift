import BearerdConfig
import Foundation
import NIOHTTP1
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// The path lists decide on the path the upstream routes (issue 35, second outside review): a
/// deny entry `/users/@me` must refuse `/users/%40me`, which WSGI, Go, Spring and nginx route to
/// the same handler, and so on for every escape a segment may hold raw, for `;` parameters
/// (Tomcat, Jetty) and for a deny entry's final slash.
@Suite("Path lists decide on the routed path")
struct RoutedPathListTests {
    /// Whether bearerd forwards `target` with these lists: parsed as the data path parses it,
    /// then checked.
    static func forwards(
        _ target: String,
        allow: [String] = [],
        deny: [String] = [],
        params: Bool = false
    ) -> Bool {
        let canonical = { (entry: String) -> String in
            guard case .parsed(let parsed) = CanonicalTarget.parse(entry, allowPathParams: params) else {
                preconditionFailure("a list entry the config would refuse: \(entry)")
            }
            return parsed.path
        }
        let lists = AccessLists(
            allowPaths: allow.map(canonical),
            denyPaths: deny.map(canonical),
            allowPathParams: params
        )
        guard case .parsed(let parsed) = CanonicalTarget.parse(target, allowPathParams: params) else { return false }
        return lists.refusal(method: .GET, path: parsed.path) == nil
    }

    @Test(arguments: [
        ("/users/%40me", ["/users/@me"], false),
        ("/users/%40me/settings", ["/users/@me"], false),
        ("/v1/ops%3Acancel", ["/v1/ops:cancel"], false),
        ("/v1/ops%3acancel", ["/v1/ops:cancel"], false),
        ("/v1/x%3AsetIamPolicy", ["/v1/x:setIamPolicy"], false),
        ("/a%2Bb", ["/a+b"], false),
        ("/a%21%24%26%27%28%29%2A%2C%3D", ["/a!$&'()*,="], false),
        ("/admin", ["/admin/"], false),
        ("/ADMIN", ["/admin/"], false),
        ("/admin;x=1/users", ["/admin"], true),
        ("/admin%3Bx=1/users", ["/admin"], true),
        ("/;x/admin", ["/admin"], true),
        ("/caf%C3%A9", ["/café"], false),
        ("/%EF%BD%81dmin", ["/admin"], false),
        ("/adm%C4%B1n", ["/admin"], false),
        ("/admin.", ["/admin"], false),
        ("/admin../x", ["/admin"], false),
        ("/admin%20", ["/admin"], false),
        ("/admin.%20", ["/admin"], false),
        ("/admin%20./x", ["/admin"], false),
        ("/admin%C2%A0", ["/admin"], false),
        ("/admin::$DATA", ["/admin"], false),
        ("/admin::%24data/x", ["/admin"], false),
        ("/admin.::$DATA%20", ["/admin"], false),
    ])
    func aDeniedPathIsRefusedInEveryFormItIsRoutedAs(target: String, deny: [String], params: Bool) {
        #expect(!Self.forwards(target, deny: deny, params: params), "\(target) passed deny_paths \(deny)")
    }

    @Test(arguments: [
        ("/users/%40you", ["/users/@me"]),
        ("/administrator", ["/admin/"]),
        ("/v1/ops", ["/v1/ops:cancel"]),
        ("/a%3Fb", ["/a"]),
        ("/admin.html", ["/admin"]),
        // A format suffix is another name (documented as not covered: deny it by name).
        ("/admin.json", ["/admin"]),
        ("/admin%20x", ["/admin"]),
    ])
    func anotherPathStillPasses(target: String, deny: [String]) {
        #expect(Self.forwards(target, deny: deny), "\(target) refused by deny_paths \(deny)")
    }

    @Test func anAllowEntryMustCoverEveryRoutedForm() {
        #expect(Self.forwards("/users/%40me/x", allow: ["/users/@me/"]))
        #expect(Self.forwards("/users/@me/x", allow: ["/users/%40me/"]))
        #expect(!Self.forwards("/api;x=1/../admin", allow: ["/api/"], params: true))
        #expect(Self.forwards("/api;v=1/items", allow: ["/api/"], params: true))
    }

    /// A decoding router, as WSGI's PATH_INFO, Go's `r.URL.Path` and Spring see a target: every
    /// escape decoded, `;` parameters dropped from each segment (Tomcat, Jetty) when they are
    /// forwarded at all, empty segments gone, NFKC. Its decisions are the reference.
    static func routed(_ target: String, params: Bool) -> String {
        let path = String(target.prefix { $0 != "?" })
        var decoded = path.removingPercentEncoding ?? path
        if params {
            decoded = decoded.split(separator: "/").map { $0.prefix { $0 != ";" } }.joined(separator: "/")
        }
        let segments = decoded.precomposedStringWithCompatibilityMapping.split(separator: "/")
        return "/" + segments.joined(separator: "/")
    }

    /// Whether `entry` covers the routed `path` by whole segments, in the router's terms.
    static func under(_ entry: String, _ path: String, anyCase: Bool) -> Bool {
        let fold = { (text: String) in anyCase ? text.lowercased() : text }
        let entrySegments = fold(routed(entry, params: false)).split(separator: "/")
        let pathSegments = fold(path).split(separator: "/")
        return pathSegments.starts(with: entrySegments)
    }

    /// For random targets and lists: whatever bearerd forwards, the decoding router routes to a
    /// path no deny entry covers and, with an allow list, one an allow entry covers.
    @Test(arguments: [false, true])
    func neverForwardsWhatADecodingRouterRoutesToADeniedPath(params: Bool) {
        var random = SplitMix64(seed: params ? 35 : 34)
        let pieces = [
            "admin", "ADMIN", "Admin", "adm%69n", "%61dmin", "%EF%BD%81dmin", "users", "@me", "%40me", "%40",
            "ops:cancel", "ops%3Acancel", "ops%3acancel", "v1", "api", "x", ";x=1", "%3Bx", "a+b", "a%2Bb",
            "caf%C3%A9", "café", "%3F", "items", "",
        ]
        let denyEntries = ["/admin", "/admin/", "/users/@me", "/v1/ops:cancel", "/api/x", "/a+b/", "/café"]
        let allowEntries = ["/api/", "/users/", "/v1/", "/items"]
        var forwarded = 0
        for _ in 0..<20_000 {
            let count = Int(random.next() % 4) + 1
            var target =
                "/"
                + (0..<count).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }
                .joined(separator: random.next() % 5 == 0 ? ";" : "/")
            if random.next() % 4 == 0 { target += "/" }
            if random.next() % 4 == 0 { target += "?q=1" }
            let deny = denyEntries.filter { _ in random.next() % 2 == 0 }
            let allow = random.next() % 3 == 0 ? allowEntries.filter { _ in random.next() % 2 == 0 } : []
            guard Self.forwards(target, allow: allow, deny: deny, params: params) else { continue }
            forwarded += 1
            let route = Self.routed(target, params: params)
            let denied = deny.first { Self.under($0, route, anyCase: true) }
            #expect(denied == nil, "\(target) forwarded, routed as \(route) under deny entry \(denied ?? "")")
            if !allow.isEmpty {
                #expect(
                    allow.contains { Self.under($0, route, anyCase: false) },
                    "\(target) forwarded, routed as \(route), outside allow_paths \(allow)"
                )
            }
        }
        #expect(forwarded > 2_000, "the generator should also make targets that pass: \(forwarded)")
    }
}

/// A small seeded generator (SplitMix64), so a failing case comes back on every run.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var value = self.state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}
