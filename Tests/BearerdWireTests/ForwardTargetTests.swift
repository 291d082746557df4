import NIOCore
import Testing

@testable import BearerdWire

/// The target forwarded from the head's own bytes must be the canonical target, byte for byte:
/// the shortcut may skip the string, never the checks.
struct ForwardTargetTests {
    static let targets = [
        "/", "/small", "/users?id=1", "/users?id=1&next=/a/../b", "/a..b/.c/d.", "/a?", "/a?b?c",
        "/api/v1/organisations/4f9c2b1e-8a3d-4c5e/members?page=2&filter=active-users-only",
        "/a-_~!$&'()*+,=:@b", "/%61%64%6D%69%6e", "/a%2cb%3a", "/a?b=%2f", "/a//b", "//a", "/a/./b", "/a/../b",
        "/..", "/.", "/a/.", "/a/..?x", "/a;b", "/a;b?c", "/a%20b", "/a\\b", "/a#f", "/a%2fb", "/a%",
        "/a?b=%2f&c=/d/../e",
    ]

    @Test(arguments: Self.targets, [false, true])
    func theForwardedTargetIsTheCanonicalOne(target: String, allowPathParams: Bool) throws {
        let head = try RequestHead.get(target)
        let canonical = CanonicalTarget.parse(target, allowPathParams: allowPathParams)
        let forward = ForwardTarget.of(head, allowPathParams: allowPathParams)
        guard case .parsed(let expected) = canonical else {
            #expect(forward.refusal == canonical.refusal, "\(target)")
            return
        }
        let checked = try #require(forward.value, "\(target) refused")
        var written = ByteBuffer()
        checked.write(of: head, into: &written)
        #expect(String(buffer: written) == expected.target, "\(target)")
        #expect(checked.path(of: head) == expected.path, "\(target)")
    }

    @Test func aTargetCanonicalAsSentIsForwardedFromTheHeadsBytes() throws {
        let target = "/api/v1/organisations/4f9c2b1e-8a3d-4c5e/members?page=2"
        let head = try RequestHead.get(target)
        #expect(ForwardTarget.of(head, allowPathParams: false).value == .asSent(pathLength: 48))
    }

    @Test func aTargetThatIsNotCanonicalIsRewritten() throws {
        let head = try RequestHead.get("/%61dmin")
        guard case .rewritten(let canonical) = ForwardTarget.of(head, allowPathParams: false).value else {
            Issue.record("forwarded as sent")
            return
        }
        #expect(canonical.target == "/admin")
    }
}
