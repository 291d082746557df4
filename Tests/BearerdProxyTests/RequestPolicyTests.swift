import BearerdConfig
import BearerdSockets
import NIOCore
import NIOHTTP1
import Testing

@testable import BearerdProxy
@testable import BearerdWire

@Suite("Which requests may be forwarded")
struct RequestPolicyTests {
    static func head(
        _ method: HTTPMethod = .GET,
        _ uri: String,
        _ headers: HTTPHeaders = ["host": "127.0.0.1:8080"]
    ) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
    }

    @Test(
        "refused requests",
        arguments: [
            (head(.CONNECT, "api.example.com:443"), 400, "CONNECT"),
            (head(.GET, "http://other.example/x"), 400, "origin-form"),
            (head(.GET, "https://api.example.com/x"), 400, "origin-form"),
            (head(.OPTIONS, "*"), 400, "origin-form"),
            (head(.GET, "/a/../b"), 400, "segment"),
            (head(.GET, "/.."), 400, "segment"),
            (head(.GET, "/a/%2e%2E/b"), 400, "segment"),
            (head(.GET, "/a/./b"), 400, "segment"),
            (head(.GET, "/%2e%2fx"), 400, "%2F"),
            (head(.TRACE, "/x"), 405, "echoes"),
            (head(.init(rawValue: "TRACK"), "/x"), 400, "not a known HTTP method"),
            (head(.GET, "/x", ["host": "a", "Host": "b"]), 400, "more than one Host"),
            (head(.GET, "/x", ["host": "a b"]), 400, "not a valid host"),
            (head(.GET, "/x", ["host": "a/b@evil"]), 400, "not a valid host"),
            (head(.GET, "/x", [:]), 400, "needs a Host"),
            (head(.POST, "/x", ["host": "h", "transfer-encoding": "gzip, chunked"]), 400, "chunked"),
            (head(.PUT, "/x", ["host": "h", "expect": "something-else"]), 417, "100-continue"),
            (head(.PUT, "/x", ["host": "h", "content-length": "2000"]), 413, "max_request_body"),
            (head(.GET, "/x", ["host": "h", "authorization": "Bearer mine"]), 400, "Authorization"),
        ]
    )
    func refused(head: HTTPRequestHead, status: Int, message: String) throws {
        let verdict = Self.check(head, settings: try HeaderRewriterTests.settings(Self.strict))
        guard case .answer(let failure) = verdict else {
            Issue.record("forwarded: \(head.uri)")
            return
        }
        #expect(Int(failure.status.code) == status)
        #expect(failure.message.contains(message), "\(failure.message)")
    }

    static let strict = "proxy:\n  max_request_body: 1000\n  client_authorization: reject"

    /// What the proxy does with `head`: parse it under the settings' limits, then check it.
    static func check(
        _ head: HTTPRequestHead,
        settings: ProxySettings,
        viaTCP: Bool = true,
        local: SocketAddress? = nil
    ) -> RequestPolicy.Verdict {
        do throws(ProxyError) {
            let parsed = try RequestHead(head, limits: settings.requestLimits)
            return RequestPolicy.check(parsed, settings: ProxySettings.Shared(settings), viaTCP: viaTCP, local: local)
        } catch {
            return .answer(error.failure(limits: settings.requestLimits))
        }
    }

    @Test(
        "forwarded requests",
        arguments: [
            head(.GET, "/"), head(.GET, "/users?id=1&next=/a/../b"), head(.GET, "/a..b/.c/d."),
            head(.PUT, "/x", ["host": "h", "expect": "100-Continue", "content-length": "10"]),
            head(.POST, "/x", ["host": "[::1]:8080", "transfer-encoding": "chunked"]),
        ]
    )
    func forwarded(head: HTTPRequestHead) throws {
        let verdict = Self.check(head, settings: try HeaderRewriterTests.settings(Self.strict))
        guard case .forward = verdict else {
            Issue.record("refused: \(verdict)")
            return
        }
    }

    @Test func http10WithoutHostIsFine() throws {
        let head = HTTPRequestHead(version: .http1_0, method: .GET, uri: "/x", headers: [:])
        let verdict = Self.check(head, settings: try HeaderRewriterTests.settings())
        guard case .forward = verdict else {
            Issue.record("refused: \(verdict)")
            return
        }
    }

    @Test(
        "the rebinding guard: Host against the address the client connected to",
        arguments: [
            ("127.0.0.1:8080", "127.0.0.1", 8080, true),
            ("[::1]:8080", "::1", 8080, true),
            ("[::1]", "::1", 8080, false),
            ("localhost", "127.0.0.1", 80, true),
            ("localhost:80", "127.0.0.1", 80, true),
            ("10.1.2.3:8080", "10.1.2.3", 8080, true),
            ("10.1.2.4:8080", "10.1.2.3", 8080, false),
            ("[fd00::5]:8080", "fd00::5", 8080, true),
            ("fd00::5:8080", "fd00::5", 8080, false),
            ("evil.example:8080", "127.0.0.1", 8080, false),
            ("localhost:", "127.0.0.1", 8080, false),
            ("[::1:8080", "::1", 8080, false),
            ("allowed.example", "127.0.0.1", 80, true),
            ("allowed.example:8080", "127.0.0.1", 8080, true),
            ("allowed.example:9", "127.0.0.1", 8080, false),
            ("pinned.example:9", "127.0.0.1", 8080, true),
            ("pinned.example:8080", "127.0.0.1", 8080, false),
        ]
    )
    func hostGuard(host: String, localIP: String, port: Int, permitted: Bool) throws {
        let hostGuard = HostGuard(allowedHosts: ["allowed.example", "pinned.example:9"])
        let local = try SocketAddress(ipAddress: localIP, port: port)
        #expect(hostGuard.permits(host, local: local) == permitted)
    }

    @Test func unixSocketCallersAreNotAskedForAHostName() throws {
        let local = try SocketAddress(unixDomainSocketPath: "/tmp/bearerd-test.sock")
        #expect(HostGuard(allowedHosts: []).permits("evil.example", local: local))
    }
}
