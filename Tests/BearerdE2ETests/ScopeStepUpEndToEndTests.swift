import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

/// A 403 `insufficient_scope` from the API, end to end against django-oauth-toolkit, whose
/// /api/admin needs the admin scope and names it (RFC 6750 §3.1).
@Suite(
    "More scope when the API asks, end to end",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(3))
)
struct ScopeStepUpEndToEndTests {
    typealias Daemon = BrowserLoginEndToEndTests.Daemon

    static func get(_ port: Int, _ path: String) async throws -> (status: Int, body: String) {
        let group = MultiThreadedEventLoopGroup.singleton
        let response = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            try await client.send(.GET, path)
        }
        return (Int(response.status), response.bodyText)
    }

    @Test func aClientTokenGetsAnAllowedScopeAndTheRequestSucceeds() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let allowed = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "cc-client",
            secret: "cc-secret",
            extra: "  client_credentials: true\n  scopes: [read]\n  scope_step_up: true\n  scope_step_up_allow: [admin]"
        )
        // The client token first: django-oauth-toolkit hashes the client secret on each token
        // request, and on a loaded machine the first one can outlast proxy.token_wait (2 s);
        // this test is about the step-up, not the start. Once a second: each look is a process
        // of its own, and the suites beside this one measure their answers' times.
        let deadline = ContinuousClock.now + .seconds(30)
        func ready() async throws -> Bool {
            try await allowed.status().split(separator: "\n").contains {
                let line = $0.trimmingCharacters(in: .whitespaces)
                return line.hasPrefix("state:") && line.hasSuffix(" ready")
            }
        }
        while try await !ready(), ContinuousClock.now < deadline {
            try await Task.sleep(for: .seconds(1))
        }
        let first = try await Self.get(allowed.port, "/api/admin")
        #expect(first.status == 200 && first.body.contains("\"admin\": true"), "\(first)")
        let status = try await allowed.status()
        #expect(status.contains("scope:") && status.contains("read admin"), "\(status)")
        #expect(status.contains("api asks:") && status.contains("granted"), "\(status)")
        // Past the 10 s token's refresh, the client token still has it.
        try await Task.sleep(for: .seconds(11))
        #expect(try await Self.get(allowed.port, "/api/admin").status == 200)
        allowed.process.signal(SIGTERM)
        _ = try await allowed.process.wait()

        // admin is not in the allow list: the 403 goes to the caller; admin is never asked for.
        let refused = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "cc-client",
            secret: "cc-secret",
            extra: "  client_credentials: true\n  scopes: [read]\n  scope_step_up: true\n  scope_step_up_allow: [write]"
        )
        let passed = try await Self.get(refused.port, "/api/admin")
        #expect(passed.status == 403)
        let after = try await refused.status()
        #expect(after.contains("scope:         read\n"), "\(after)")
        #expect(after.contains("admin is not in auth.scope_step_up_allow"), "\(after)")
        refused.process.signal(SIGTERM)
        _ = try await refused.process.wait()
        try await server.stop()
    }

    @Test func aPersonsSessionIsToldAndTheNextLoginAsksForTheUnion() async throws {
        let server = try await OAuthServer.start(ttl: 10)
        defer { Task { try? await server.stop() } }
        let daemon = try await Daemon.start(
            issuer: server.baseURL + "/o",
            upstream: server.baseURL,
            clientID: "code-client",
            extra: "  scopes: [read]"
        )
        #expect(try await daemon.login(browser: daemon.browser(log: "first.log")).status == 0)
        let refused = try await Self.get(daemon.port, "/api/admin")
        #expect(refused.status == 403)
        let status = try await daemon.status()
        #expect(status.contains("api asks:") && status.contains("scope admin"), "\(status)")
        #expect(status.contains("`bearerd login` asks for it"), "\(status)")
        let again = try await daemon.login(browser: daemon.browser(log: "second.log"))
        #expect(again.status == 0)
        #expect(again.stderr.contains("scope=read%20admin"), "\(again.stderr)")
        #expect(try await Self.get(daemon.port, "/api/admin").status == 200)
        daemon.process.signal(SIGTERM)
        _ = try await daemon.process.wait()
        try await server.stop()
    }
}
