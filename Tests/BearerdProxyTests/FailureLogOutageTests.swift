import BearerdAuth
import BearerdTestSupport
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import Testing

/// Issue 34: during a 35 s token-server outage with 50 clients, bearerd wrote 1.46 million
/// `request failed` warnings in 70 s, and journald's rate limit then dropped its other messages.
/// Thousands of failed requests through the real proxy must leave a handful of warnings (the
/// first failure of each kind, then its summaries), with every request's detail at debug.
@Suite("An outage does not flood the log", .serialized, .timeLimit(.minutes(2)))
struct FailureLogOutageTests {
    /// What fails: the token provider, or the upstream's port.
    enum Outage: String, CaseIterable, Sendable {
        case tokenServer
        case upstream
    }

    static let connections = 16
    static let requestsPerConnection = 250

    @Test(arguments: Outage.allCases)
    func thousandsOfFailedRequestsWriteAHandfulOfWarnings(_ outage: Outage) async throws {
        let refusing = try RefusingPort()
        let tokens =
            outage == .tokenServer
            ? RecordingTokenProvider(
                token: nil,
                error: .tokenServerUnavailable("the token server does not answer", retryAfterSeconds: 5)
            ) : nil
        let upstreamURL = outage == .upstream ? "http://127.0.0.1:\(refusing.port)" : nil
        let sent = Self.connections * Self.requestsPerConnection
        let started = ContinuousClock.now
        let (logs, statuses): (InMemoryLogHandler, [Int: Int]) = try await ProxyFixture.with(
            yaml: "log:\n  access: false",
            upstreamURL: upstreamURL,
            tokens: tokens
        ) { proxy in
            let statuses = try await withThrowingTaskGroup(of: [Int: Int].self) { group in
                for _ in 0..<Self.connections {
                    group.addTask {
                        try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                            client in
                            var statuses: [Int: Int] = [:]
                            for _ in 0..<Self.requestsPerConnection {
                                let response = try await client.send(.GET, "/during-outage?key=secret")
                                statuses[response.status, default: 0] += 1
                            }
                            return statuses
                        }
                    }
                }
                return try await group.reduce(into: [:]) { all, one in all.merge(one, uniquingKeysWith: +) }
            }
            // The failures stop: the summary comes within the window, not only at shutdown.
            let logs = proxy.logs
            try await waitUntil(.seconds(10), every: .milliseconds(50)) {
                logs.entries.contains { $0.message.description == "request failed (repeated)" }
            }
            return (proxy.logs, statuses)
        }
        let took = ContinuousClock.now - started
        withExtendedLifetime(refusing) {}
        let expectedStatus = outage == .tokenServer ? 503 : 502
        #expect(statuses == [expectedStatus: sent], "\(statuses)")

        let entries = logs.entries
        let warnings = entries.filter { $0.level >= .warning }
        let failed = entries.filter { $0.message.description.hasPrefix("request failed") }
        let detail = failed.filter { $0.level == .debug }
        let summaries = failed.filter { $0.message.description == "request failed (repeated)" }
        let counted = summaries.compactMap { $0.metadata["count"].flatMap { Int("\($0)") } }.reduce(0, +)
        print(
            "\(outage): \(sent) failed requests in \(took): \(warnings.count) warning lines, "
                + "\(summaries.count) summaries counting \(counted), \(detail.count) at debug"
        )
        // The first failure at once, then at most one summary per 5 s window begun meanwhile (a
        // loaded machine stretches the run past a window's end: 9.9 s is two windows).
        let lines = 1 + Int((took / .seconds(5)).rounded(.up))
        #expect(warnings.count <= lines, "\(warnings.prefix(5).map(\.message))")
        #expect(failed.first?.level == .warning, "the first failure is written at once")
        // Every failure is accounted for: the first line, then the summaries' counts.
        #expect(1 + counted == sent)
        #expect(detail.count == sent - 1, "each later failure's detail goes at debug")
        // No log line holds the query string.
        #expect(!entries.contains { "\($0.message) \($0.metadata)".contains("secret") })
    }
}
