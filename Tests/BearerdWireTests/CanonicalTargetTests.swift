import Foundation
import Testing

@testable import BearerdWire

@Suite("One canonical request target, checked and forwarded")
struct CanonicalTargetTests {
    @Test(
        "canonical forms",
        arguments: [
            ("/", "/"), ("/a//b///c/", "/a/b/c/"), ("//evil.example/x", "/evil.example/x"),
            ("/%61%64%6D%69%6e", "/admin"), ("/%7e%2D%5f%2e", "/~-_."), ("/a%2cb%3a", "/a%2Cb%3A"),
            ("/x y", nil), ("/caf%c3%a9", "/caf%C3%A9"), ("/café", "/caf%C3%A9"), ("/a|b{c}", "/a%7Cb%7Bc%7D"),
            ("/a?b=%2f&c=/d/../e", "/a?b=%2F&c=/d/../e"), ("/a?", "/a?"), ("/a..b/.c/d.", "/a..b/.c/d."),
            ("/100%25", "/100%25"), ("/a?q=caf\u{e9}", "/a?q=caf%C3%A9"),
        ] as [(String, String?)]
    )
    func canonical(input: String, expected: String?) {
        let parsed = CanonicalTarget.parse(input, allowPathParams: false).value
        #expect(parsed?.target == expected, "\(input)")
    }

    @Test(
        "targets with no single meaning across upstreams are refused",
        arguments: [
            "x", "*", "http://h/x", "/a/../b", "/..", "/.", "/a/./b", "/%2e%2E/x", "/.%2e/x", "/%2E/x", "/a%2fb",
            "/a%2Fb", "/a%5cb", "/a\\b", "/a%00", "/a%0d%0aX: y", "/a%7f", "/a#f", "/a?b#f", "/a%", "/a%4",
            "/a%g0", "/a?b=%zz", "/a;b", "/a%3bb", "/%252e%252e/x", "/%25%32%65", "/%c0%ae%c0%ae/x", "/%c0%af",
            "/%e0%80%ae", "/%ff", "/%ef%bc%8e%ef%bc%8e/x", "/%ef%bc%8f", "/a/\u{2025}/b", "/a\u{ff3c}b", "/a\tb",
            "/admin\u{37e}x", "/a%cd%bex",
        ]
    )
    func refused(input: String) {
        #expect(CanonicalTarget.parse(input, allowPathParams: false).refusal != nil)
    }

    /// Targets already canonical are forwarded as the client's own string; the shortcut must
    /// agree with the parser on them and refuse to shortcut anything else.
    @Test(arguments: [
        "/", "/users/42", "/a.b/c..d/.e/f.", "/a-b_c~d/e!$&'()*+,=:@f?q=1&r=/s?t", "/x?", "/a/b/",
        "/..", "/.", "/a/./b", "/a/../b", "//a", "/a//b", "/a;b", "/a%20b", "/a?b=%2f", "/a\\b", "/é",
        "/a?b;c", "/a/..?x", "/a/.?x",
    ])
    func theShortcutAgreesWithTheParser(target: String) {
        let fast = CanonicalTarget.parse(target, allowPathParams: false)
        let slow = CanonicalTarget.parseByteByByte(target, allowPathParams: false)
        #expect(fast == slow, "\(target)")
    }

    @Test func pathParametersAreKeptWhenAllowedButNeverHideADotSegment() throws {
        #expect(try #require(CanonicalTarget.parse("/a;v=1/b", allowPathParams: true).value).path == "/a;v=1/b")
        for input in ["/..;x/b", "/%2e%2e;/b", "/.;/b", "/a/..;"] {
            #expect(CanonicalTarget.parse(input, allowPathParams: true).refusal != nil)
        }
    }

    /// Random targets built from the pieces attacks are made of: whatever is accepted is
    /// canonical (parsing it again changes nothing), has no `.`/`..` segment or `//` in any
    /// decoding, and once joined never leaves the upstream's base path.
    @Test(arguments: [false, true])
    func acceptedTargetsAreCanonicalIdempotentAndStayUnderTheBase(allowPathParams: Bool) throws {
        let pieces = [
            "/", "/", "//", ".", "..", "%2e", "%2E", "%2f", "%5c", "\\", "%25", "%", "a", "A", "%41", "%7e", ";", "?",
            "#", "%00", "%c0%ae", "%ef%bc%8e", "~", "%g1", "é", "\u{2025}", "%3b", "=", "%20", "x", "b", "&", "2e",
        ]
        // The base path of `https://api.example.com/v2` (UpstreamTarget's tests check the reading).
        let basePath = "/v2"
        var random = SplitMix64(seed: 0x5eed_bea7)
        var accepted = 0
        for _ in 0..<20_000 {
            let count = Int(random.next() % 9) + 1
            let target = "/" + (0..<count).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
            guard let canonical = CanonicalTarget.parse(target, allowPathParams: allowPathParams).value else {
                continue
            }
            accepted += 1
            let slow = try #require(CanonicalTarget.parseByteByByte(target, allowPathParams: allowPathParams).value)
            #expect(slow == canonical, "the shortcut and the parser differ on \(target)")
            let again = try #require(CanonicalTarget.parse(canonical.target, allowPathParams: allowPathParams).value)
            #expect(again == canonical, "not idempotent: \(target) → \(canonical.target) → \(again.target)")
            let joined = canonical.joined(under: basePath)
            #expect(joined.hasPrefix("/v2/"), "\(target) → \(joined)")
            let path = joined.prefix { $0 != "?" }
            #expect(!path.contains("//"), "\(target) → \(joined)")
            let decoded = String(path).removingPercentEncoding ?? ""
            for segment in decoded.split(separator: "/", omittingEmptySubsequences: false) {
                let name = allowPathParams ? segment.prefix { $0 != ";" } : segment
                #expect(name != "." && name != "..", "\(target) → \(joined)")
            }
            #expect(!decoded.contains("\\") && !decoded.contains("\0"), "\(target) → \(joined)")
        }
        #expect(accepted > 1000, "the generator must reach accepted targets too (\(accepted))")
    }
}

/// A small deterministic generator, so a failure repeats.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { self.state = seed }
    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE5_E4B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
