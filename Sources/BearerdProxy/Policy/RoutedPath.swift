import Foundation

/// The paths an upstream may route a canonical path (``CanonicalTarget/path``) to, for the path
/// lists: bearerd forwards the canonical form, but the common frameworks route on another one.
/// WSGI's `PATH_INFO`, Go's `r.URL.Path`, Spring and nginx locations decode every escape first
/// (`/users/%40me` is `/users/@me`), Tomcat and Jetty drop `;` parameters from each segment
/// (`/admin;x=1/users` is `/admin/users`), and some normalise Unicode (NFKC: `／ａdmin`). A deny
/// entry must match every one of them, and an allow entry must cover every one.
///
/// Escapes whose decoding would change the path's structure stay escaped: `%25`, `%3F`, `%23`
/// (and `%2F`, `%5C`, the controls, which ``CanonicalTarget`` refuses before).
package enum RoutedPath {
    /// The forms of `path` a router may see, the canonical one first, each once.
    package static func forms(of path: String, allowPathParams: Bool) -> [String] {
        // Most paths: nothing to decode, no parameter, ASCII.
        if !path.utf8.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: ";") || $0 >= 0x80 }) {
            return [path]
        }
        let decoded = Self.decoded(path)
        var forms = [path, decoded]
        if allowPathParams {
            // Tomcat strips parameters before it decodes; others decode first (`%3B` is then one).
            forms += [Self.withoutParameters(path), Self.withoutParameters(decoded)]
        }
        forms += forms.map { $0.precomposedStringWithCompatibilityMapping }
        var seen: Set<String> = []
        return forms.filter { seen.insert($0).inserted }
    }

    /// `forms`, and what routers that fold more than ASCII case or trim segments read them as, for
    /// the deny list only (an allow entry matches as written): Unicode case both ways (ASP.NET
    /// matches routes case-insensitively, and `ı` uppercases to `I`), and each segment as Windows
    /// and IIS read a file name: without its trailing dots, spaces and no-break spaces, in any
    /// order (`/admin.`, `/admin%20`, `/admin.%20` and `/admin%C2%A0` are `/admin`), and without
    /// the default data stream's name (`/admin::$DATA`). A suffix is another name
    /// (`/admin.json` is not `/admin`): routers that map a format suffix to a route need an entry
    /// of their own (docs/security.md).
    package static func denyVariants(of forms: [String]) -> [String] {
        var variants = forms
        for form in forms {
            if form.utf8.contains(where: { $0 >= 0x80 }) {
                variants += [form.uppercased(), form.lowercased()]
            }
            if form.contains(where: { $0 == "." || $0 == " " || $0 == "\u{A0}" || $0 == ":" }) {
                let trimmed = form.split(separator: "/", omittingEmptySubsequences: false).map(Self.asWindowsNames)
                variants.append(trimmed.joined(separator: "/"))
            }
        }
        return variants
    }

    /// A segment as Windows resolves a file name: `::$DATA` (any case), then trailing dots and
    /// spaces (and no-break spaces, which some routers fold to spaces), until none is left.
    static func asWindowsNames(_ segment: Substring) -> Substring {
        var segment = segment
        while true {
            let before = segment.count
            if segment.count >= 7, segment.suffix(7).lowercased() == "::$data" { segment = segment.dropLast(7) }
            while let last = segment.last, last == "." || last == " " || last == "\u{A0}" {
                segment = segment.dropLast()
            }
            if segment.count == before { return segment }
        }
    }

    /// The forms a router acts on: every form but the canonical one when they differ.
    package static func routed(of path: String, allowPathParams: Bool) -> [String] {
        let forms = Self.forms(of: path, allowPathParams: allowPathParams)
        return forms.count == 1 ? forms : Array(forms.dropFirst())
    }

    /// `path` with every escape decoded but those that would change its structure.
    static func decoded(_ path: String) -> String {
        let bytes = Array(path.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let value = Self.escaped(bytes[index + 1], bytes[index + 2]), !Self.keptEscaped.contains(value)
            {
                out.append(value)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        // The canonical form was checked to be UTF-8 once decoded.
        return String(decoding: out, as: UTF8.self)
    }

    /// Each segment up to its first `;`; a segment left empty goes (`/;x/a` is `/a`).
    static func withoutParameters(_ path: String) -> String {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { segment in
            segment.prefix { $0 != ";" }
        }
        let kept = segments.filter { !$0.isEmpty }
        let joined = "/" + kept.joined(separator: "/")
        return segments.last?.isEmpty == true && !kept.isEmpty ? joined + "/" : joined
    }

    /// `%`, `?`, `#`, `/`, `\` and the controls: decoded, they would be read as structure.
    private static let keptEscaped: Set<UInt8> = Set(
        [UInt8(ascii: "%"), UInt8(ascii: "?"), UInt8(ascii: "#"), UInt8(ascii: "/"), UInt8(ascii: "\\"), 0x7F]
            + Array(0..<0x20)
    )

    private static func escaped(_ high: UInt8, _ low: UInt8) -> UInt8? {
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        guard let high = hex(high), let low = hex(low) else { return nil }
        return high << 4 | low
    }
}
