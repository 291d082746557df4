import BearerdTestSupport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization
import Testing

/// OpenTelemetry traces, received by a real OTLP/HTTP receiver (`scripts/otlp-receiver`,
/// opentelemetry-proto's decoder): a request's span continues the client's `traceparent`, the
/// upstream gets this span as its parent, and the refresh a 401 forced links to the request
/// that waited for it.
@Suite(
    "Traces over OTLP",
    .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["BEARERD_SKIP_E2E"] == nil),
    .timeLimit(.minutes(2))
)
struct TracingEndToEndTests {
    enum TraceIDs {
        /// `00-<32 hex>-<16 hex>-<2 hex>`.
        static func isW3C(_ text: String) -> Bool {
            let parts = text.split(separator: "-")
            return parts.count == 4 && parts[0] == "00" && parts[1].count == 32 && parts[2].count == 16
        }
    }

    static let clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let clientSpan = "00f067aa0ba902b7"

    @Test func aRequestThatWaitedForARefreshIsOneTraceWithTheRefreshLinkedToIt() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let receiver = try await OTLPReceiver.start()
        let oauth = try await FakeOAuthServer.start(group: group, lifetime: 8)
        let first = Mutex(true)
        // The first request is refused with its token: bearerd refreshes and sends it again.
        let upstream = try await TestUpstream.start(group: group) { _ in
            first.withLock { isFirst in
                defer { isFirst = false }
                return isFirst ? .respond(status: .unauthorized, headers: [], body: "") : .ok("traced")
            }
        }
        let directory = try TemporaryDirectory()
        let secret = try directory.write("tracing-client-secret-77\n", to: "client-secret")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:\(upstream.port)
            auth:
              token_url: \(oauth.base)/token
              client_id: app
              client_secret_file: \(secret)
              client_credentials: true
            admin:
              socket: \(directory.path)/admin.sock
            tracing:
              endpoint: \(receiver.endpoint)
              service_name: bearerd-test
            """,
            to: "bearerd.yaml"
        )
        do {
            let bearerd = try BearerdProcess(["serve", "--config", config])
            try await bearerd.waitUntilReady()
            let port = try #require(bearerd.proxyPort)
            // The client token, then past the 401 floor (a quarter of the 8 s lifetime).
            try await waitUntil(.seconds(10)) { oauth.grants.count >= 1 }
            try await Task.sleep(for: .seconds(2.5))
            let answer = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                try await client.send(
                    .GET,
                    "/api/items/42?secret-query=do-not-trace",
                    headers: HTTPHeaders([("traceparent", "00-\(Self.clientTrace)-\(Self.clientSpan)-01")])
                )
            }
            #expect(answer.status == 200 && answer.bodyText == "traced", "\(answer.bodyText)")
            // A malformed traceparent starts a trace of bearerd's own; nothing of the request
            // (its query, its other fields) reaches the log on the way.
            let malformed = try await TestHTTPClient.withConnection(to: .tcp(port: port), group: group) { client in
                try await client.send(
                    .GET,
                    "/api/x?malformed-query-secret=1",
                    headers: HTTPHeaders([("traceparent", "01-XYZ-bad"), ("x-other", "other-field-secret")])
                )
            }
            #expect(malformed.status == 200)
            bearerd.signal(SIGTERM)
            _ = try await bearerd.wait()

            // The upstream saw this trace, with bearerd's span as the parent, on both tries.
            #expect(upstream.requests.allSatisfy { $0.head.headers["traceparent"].count == 1 }, "one traceparent each")
            let parents = upstream.requests.prefix(2).map { $0.head.headers["traceparent"].first ?? "" }
            #expect(parents.count == 2 && parents.allSatisfy { $0.hasPrefix("00-\(Self.clientTrace)-") }, "\(parents)")
            let own = upstream.requests.last?.head.headers["traceparent"].first ?? ""
            #expect(TraceIDs.isW3C(own) && !own.contains(Self.clientTrace), "a trace of bearerd's own: \(own)")
            let requestSpanID = String(parents.last?.split(separator: "-")[2] ?? "")
            #expect(requestSpanID.count == 16 && requestSpanID != Self.clientSpan)

            try await waitUntil(.seconds(10)) { receiver.spans.count >= 2 }
            let spans = receiver.spans
            let request = try #require(spans.first { ($0["span_id"] as? String) == requestSpanID }, "\(spans)")
            #expect(request["trace_id"] as? String == Self.clientTrace)
            #expect(request["parent_span_id"] as? String == Self.clientSpan, "the client's span is the parent")
            #expect(request["kind"] as? String == "SPAN_KIND_SERVER")
            #expect(request["name"] as? String == "GET /api")
            let attributes = request["attributes"] as? [String: Any] ?? [:]
            #expect(attributes["http.response.status_code"] as? Int == 200, "\(attributes)")
            #expect(attributes["bearerd.retried_after_401"] as? Bool == true)
            #expect((request["resource"] as? [String: Any])?["service.name"] as? String == "bearerd-test")

            let refresh = try #require(
                spans.first {
                    ($0["name"] as? String) == "token refresh" && (($0["links"] as? [Any])?.isEmpty == false)
                },
                "\(spans)"
            )
            let links = refresh["links"] as? [[String: Any]] ?? []
            #expect(
                links.contains {
                    $0["trace_id"] as? String == Self.clientTrace && $0["span_id"] as? String == requestSpanID
                },
                "the refresh links to the request that waited for it: \(links)"
            )
            let refreshAttributes = refresh["attributes"] as? [String: Any] ?? [:]
            #expect(refreshAttributes["bearerd.reason"] as? String == "upstream_401", "\(refreshAttributes)")
            #expect(refreshAttributes["bearerd.grant"] as? String == "client_credentials")
            #expect(refreshAttributes["bearerd.result"] as? String == "ok")
            #expect(refreshAttributes["bearerd.server_ms"] is Double)

            let raw = receiver.rawText
            for secret in ["fake-access-", "tracing-client-secret-77", "do-not-trace", "secret-query"] {
                #expect(!raw.contains(secret), "\(secret) in a span")
            }
            #expect(bearerd.stderr.contains("trace_id=\(Self.clientTrace)"), "the access line names the trace")
            #expect(
                !bearerd.stderr.contains("malformed-query-secret") && !bearerd.stderr.contains("other-field-secret")
            )
        } catch {
            try? await receiver.stop()
            await oauth.stop()
            try? await group.shutdownGracefully()
            throw error
        }
        try await receiver.stop()
        await oauth.stop()
        try await group.shutdownGracefully()
    }

    /// swift-otel reads OTEL_* itself: it would stop the process for an exporter or propagator
    /// this build leaves out (gRPC, baggage) and log a collector's header with its value. bearerd
    /// takes those variables out first, keeping the headers, which it never logs.
    @Test func otelVariablesThisBuildLacksAreIgnoredAndHeadersAreNeverLogged() async throws {
        let directory = try TemporaryDirectory()
        let token = try directory.write("static-token-0001\n", to: "token")
        let config = try directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              static_token_file: \(token)
            admin:
              socket: \(directory.path)/admin.sock
            log:
              level: debug
            tracing:
              endpoint: http://127.0.0.1:9/v1/traces
            """,
            to: "bearerd.yaml"
        )
        let bearerd = try BearerdProcess(
            ["serve", "--config", config],
            environment: [
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_PROPAGATORS": "tracecontext,baggage",
                "OTEL_TRACES_SAMPLER": "jaeger_remote", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=otel-header-secret-55",
            ]
        )
        try await bearerd.waitUntilReady()
        bearerd.signal(SIGTERM)
        #expect(try await bearerd.wait() == 0, "\(bearerd.stderr)")
        #expect(bearerd.stderr.contains("OTEL_* variables ignored"), "\(bearerd.stderr)")
        #expect(bearerd.stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL,OTEL_PROPAGATORS,OTEL_TRACES_SAMPLER"))
        #expect(!bearerd.stderr.contains("otel-header-secret-55"), "a collector's key in the log")
    }
}
