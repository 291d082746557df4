import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `/metrics`, `/health` and `/ready`, on `metrics.listen` and on the admin socket, from the
/// real binary: the counts must match the requests sent.
@Suite("Metrics and health", .serialized, .timeLimit(.minutes(2)))
struct MetricsTests {
    @Test func theCountsMatchTheRequestsSent() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // 8 s tokens: each is refreshed 3.6 to 4.4 s after it came (half its lifetime, ± 10 %),
        // and a 401 forces a refresh only for one older than a quarter of its lifetime (2 s).
        let oauth = try await FakeOAuthServer.start(group: group, lifetime: 8)
        // The first request for /fresh is refused 401: bearerd refreshes and retries it once.
        let refusedOnce = Once()
        let upstream = try await TestUpstream.start(group: group) { request in
            if request.head.uri.hasPrefix("/missing") { return .respond(status: .notFound, headers: [], body: "nope") }
            if request.head.uri == "/fresh", refusedOnce.first() {
                return .respond(status: .unauthorized, headers: [], body: "")
            }
            return .ok("twelve bytes")
        }
        let directory = try TemporaryDirectory()
        var config = try SessionVerbTests.config(directory, oauth: oauth, upstream: upstream.port)
        config = try directory.write(
            try String(contentsOfFile: config, encoding: .utf8) + "\nmetrics:\n  listen: 127.0.0.1:0\n",
            to: "b.yaml"
        )
        let login = try await BearerdProcess.run(
            ["login", "-c", config, "--username", "alice", "--password-stdin"],
            input: "alice-pass\n"
        )
        try #require(login.status == 0, "\(login.stderr)")
        let notify = try NotifyListener(directory: directory.path)
        let bearerd = try BearerdProcess(["serve", "-c", config], environment: ["NOTIFY_SOCKET": notify.path])
        // Ready as systemd sees it; the metrics listener is not part of readiness, so its line too.
        try await waitUntil {
            notify.messages.contains { $0.hasPrefix("READY=1") } && bearerd.stderr.contains("msg=\"metrics listening\"")
        }
        let port = try #require(bearerd.proxyPort)
        let metricsPort = try #require(bearerd.number(after: "address=127.0.0.1:"))
        // The daemon refreshes on its own; the token it got is past the floor 2 s later, and
        // /fresh goes first, more than a second before the next proactive refresh could make the
        // token it carries a fresh one (whose 401 is passed on, not retried).
        try await waitUntil(.seconds(15)) { bearerd.stderr.contains("msg=\"token refreshed\"") }
        try await Task.sleep(for: .milliseconds(2200))

        for path in ["/fresh", "/a", "/b", "/c", "/d", "/missing/1", "/missing/2"] {
            try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                _ = try await client.send(.GET, path)
            }
        }
        let scraped = try await Self.get("/metrics", .tcp(port: metricsPort), group: group)
        #expect(scraped.status == 200)
        #expect(scraped.head.headers["content-type"].first?.hasPrefix("text/plain; version=0.0.4") == true)
        let values = Self.parse(scraped.bodyText)
        #expect(values[#"bearerd_requests_total{class="2xx"}"#] == 5)
        #expect(values[#"bearerd_requests_total{class="4xx"}"#] == 2)
        #expect(values[#"bearerd_requests_total{class="5xx"}"#] == 0)
        // One upstream timing per exchange: the retried one counts once.
        #expect(values["bearerd_upstream_duration_seconds_count"] == 7)
        #expect(values["bearerd_upstream_401_retries_total"] == 1)
        #expect(values["bearerd_requests_in_flight"] == 0)
        #expect(values["bearerd_response_body_bytes_total"] == Double(5 * 12 + 2 * 4))
        #expect((values[#"bearerd_token_refreshes_total{result="ok"}"#] ?? 0) >= 1)
        #expect((values["bearerd_token_expiry_seconds"] ?? 0) > 0)
        #expect(values["bearerd_token_valid"] == 1)

        // The same on the admin socket; health and readiness on both.
        let viaAdmin = try await Self.get("/metrics", .unix(path: directory.path + "/run/admin.sock"), group: group)
        #expect(Self.parse(viaAdmin.bodyText)[#"bearerd_requests_total{class="2xx"}"#] == 5)
        let ready = try await Self.get("/ready", .tcp(port: metricsPort), group: group)
        #expect(ready.status == 200)
        let health = try await Self.get("/health", .tcp(port: metricsPort), group: group)
        #expect(health.bodyText.contains(#""state":"ready""#) && health.bodyText.contains(#""expires_in":"#))
        // Only those three on TCP: never a token there, and never on the proxy port.
        #expect(try await Self.get("/v1/token", .tcp(port: metricsPort), group: group).status == 404)
        #expect(try await Self.get("/v1/status", .tcp(port: metricsPort), group: group).status == 404)
        let before = upstream.requests.count
        _ = try await Self.get("/metrics", .tcp(port: port), group: group)
        #expect(upstream.requests.count == before + 1, "the proxy port forwards /metrics to the upstream")

        // metrics.listen has the proxy's rebinding guard, a connection cap and timeouts: past the
        // cap the oldest connection is closed, and the proxy keeps serving.
        let rebound = try await RawClient.exchange(
            port: metricsPort,
            "GET /metrics HTTP/1.1\r\nHost: rebind.evil.example:\(metricsPort)\r\nConnection: close\r\n\r\n",
            group: group
        )
        #expect(rebound.hasPrefix("HTTP/1.1 403 "), "\(rebound.prefix(200))")
        let silent = (0..<40).map { _ in LoopbackSocket.silentConnection(to: metricsPort) }
        let closedByServer = try await Self.closedWithin(silent, milliseconds: 1000)
        #expect(closedByServer >= 40 - 16, "\(closedByServer) of 40 silent connections were closed")
        // Every slot held by one local user: a scrape still gets through (the oldest goes).
        let whileFlooded = try await Self.get("/metrics", .tcp(port: metricsPort), group: group)
        #expect(whileFlooded.status == 200)
        try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
            let answer = try await client.send(.GET, "/while-metrics-is-flooded")
            #expect(answer.status == 200)
        }
        for descriptor in silent { close(descriptor) }

        // systemd's STATUS= line tells the session's state and its token's time left. The 8 s
        // token may be due for its proactive refresh by the time the daemon is up (a loaded
        // machine takes seconds between the login and READY=1): ready or refreshing, never
        // without the session and its time left.
        let ready1 = try #require(notify.messages.first)
        #expect(
            ["ready", "refreshing"].contains {
                ready1.hasPrefix("READY=1\nSTATUS=\($0), user session; token expires in ")
            },
            "\(ready1)"
        )

        // Logged out: not ready.
        #expect(try await BearerdProcess.run(["logout", "-c", config]).status == 0)
        let notReady = try await Self.get("/ready", .tcp(port: metricsPort), group: group)
        #expect(notReady.status == 503 && notReady.bodyText.contains("bearerd login"))
        for text in [scraped.bodyText, health.bodyText, viaAdmin.bodyText] {
            SessionVerbTests.expectNoSecret(text)
        }

        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0)
        await upstream.stop()
        await oauth.stop()
        try await group.shutdownGracefully()
    }

    /// How many of the connections the server closed (a read returns end of file) within the time.
    static func closedWithin(_ descriptors: [Int32], milliseconds: Int32) async throws -> Int {
        var entries = descriptors.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
        let deadline = ContinuousClock.now + .milliseconds(Int(milliseconds))
        var closed = Set<Int32>()
        while ContinuousClock.now < deadline && closed.count < descriptors.count {
            // Never block a thread of the shared pool: look, then yield for a moment.
            guard poll(&entries, nfds_t(entries.count), 0) > 0 else {
                try await Task.sleep(for: .milliseconds(20))
                continue
            }
            for index in entries.indices where entries[index].revents != 0 {
                var byte: UInt8 = 0
                if recv(entries[index].fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0 { closed.insert(entries[index].fd) }
                entries[index].events = 0
            }
        }
        return closed.count
    }

    /// True the first time only.
    final class Once: Sendable {
        private let used = Mutex(false)

        func first() -> Bool {
            self.used.withLock { used in
                defer { used = true }
                return !used
            }
        }
    }

    static func get(
        _ path: String,
        _ target: TestHTTPClient.Target,
        group: any EventLoopGroup
    ) async throws -> TestHTTPResponse {
        try await TestHTTPClient.withConnection(to: target, group: group) { client in
            try await client.send(.GET, path)
        }
    }

    /// `name{labels} value` lines of the Prometheus text format.
    static func parse(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            values[String(line[..<space])] = value
        }
        return values
    }
}
