import BearerdConfig
import BearerdProxy
import BearerdWire
import Foundation

/// `CanonicalTarget` on a request target (first byte: bit 0 allows `;` path parameters). Its
/// promises: what it accepts is canonical and idempotent, holds no dot segment, encoded slash,
/// backslash or control character in any decoding, and once joined stays under the base path.
enum TargetTarget {
    static let upstream = UpstreamTarget.parse("https://api.example.com/v2").value!

    static func run(_ bytes: [UInt8]) -> String {
        guard let mode = bytes.first else { return "empty" }
        let allowPathParams = mode & 1 == 1
        let input = String(decoding: bytes.dropFirst(), as: UTF8.self)
        guard case .parsed(let canonical) = CanonicalTarget.parse(input, allowPathParams: allowPathParams) else {
            return "refused"
        }
        let again = CanonicalTarget.parse(canonical.target, allowPathParams: allowPathParams)
        promise(again.value == canonical, "the canonical form is idempotent")
        promise(canonical.path.hasPrefix("/") && !canonical.path.contains("//"), "one slash between segments")
        let joined = canonical.joined(under: Self.upstream.basePath)
        promise(joined.hasPrefix("/v2/"), "the joined target stays under the base path")
        promise(
            canonical.target.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "#") },
            "the target is printable ASCII without a fragment"
        )
        let decoded = canonical.path.removingPercentEncoding
        promise(decoded != nil, "the path decodes as UTF-8")
        for segment in (decoded ?? "").split(separator: "/", omittingEmptySubsequences: false) {
            let name = allowPathParams ? segment.prefix { $0 != ";" } : segment
            promise(name != "." && name != "..", "no dot segment once decoded")
        }
        promise(
            !(decoded ?? "").contains("\\") && !(decoded ?? "").unicodeScalars.contains { $0.value < 0x20 },
            "no backslash or control character once decoded"
        )
        promise(allowPathParams || !(decoded ?? "").contains(";"), "no path parameter unless allowed")
        return "accepted"
    }
}
