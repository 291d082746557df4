import BearerdConfig
import BearerdProxy
import BearerdWire
import Testing

@Suite("Upstream URL and path joining")
struct UpstreamTargetTests {
    @Test(
        "the base path and the request target join with one slash",
        arguments: [
            ("https://api.example.com/v2", "/users?id=1", "/v2/users?id=1"),
            ("https://api.example.com/v2/", "/users?id=1", "/v2/users?id=1"),
            ("https://api.example.com/v2//", "/users", "/v2/users"),
            ("https://api.example.com", "/users?id=1", "/users?id=1"),
            ("https://api.example.com/", "/users", "/users"),
            ("https://api.example.com/v2", "/", "/v2/"),
            ("https://api.example.com/v2", "/?q=a/b", "/v2/?q=a/b"),
            ("https://api.example.com/v2", "//users", "/v2/users"),
            ("https://api.example.com", "//evil.example/x", "/evil.example/x"),
            ("https://api.example.com/v2", "/a//b///c", "/v2/a/b/c"),
            ("https://api.example.com/v2", "/%61dmin/%7e%c3%a9", "/v2/admin/~%C3%A9"),
            ("https://api.example.com/a/b", "/c/d", "/a/b/c/d"),
            ("http://127.0.0.1:9401/anything", "/x%20y?z=%2f", "/anything/x%20y?z=%2F"),
        ]
    )
    func join(base: String, target: String, expected: String) throws {
        let upstream = try #require(UpstreamTarget.parse(base).value)
        let canonical = try #require(CanonicalTarget.parse(target, allowPathParams: false).value)
        #expect(canonical.joined(under: upstream.basePath) == expected)
    }

    @Test(
        "the Host header carries the port only when it is not the default",
        arguments: [
            ("https://api.example.com/v2", "api.example.com"),
            ("https://api.example.com:8443", "api.example.com:8443"),
            ("http://127.0.0.1:80", "127.0.0.1"),
            ("http://[::1]:9401/x", "[::1]:9401"),
            // An international name goes on the wire in its ASCII form: DNS and Host take no other.
            ("https://xn--bcher-kva.example", "xn--bcher-kva.example"),
            ("https://bücher.example:8443", "xn--bcher-kva.example:8443"),
        ]
    )
    func hostHeader(url: String, expected: String) throws {
        #expect(try #require(UpstreamTarget.parse(url).value).hostHeader == expected)
    }

    @Test func ipv6HostIsUnbracketedForConnecting() throws {
        let upstream = try #require(UpstreamTarget.parse("http://[::1]:9401").value)
        #expect(upstream.host == "::1")
        #expect(upstream.port == 9401)
    }

    @Test func aPercentEncodedHostIsRefused() {
        let problem = UpstreamTarget.parse("https://ex%61mple.com/v1").refusal
        #expect(problem?.contains("percent-encoding") == true, "a percent-encoded host was taken")
    }
}
