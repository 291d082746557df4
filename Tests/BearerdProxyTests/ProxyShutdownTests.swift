import BearerdProxy
import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Testing

@Suite("Graceful shutdown")
struct ProxyShutdownTests {
    @Test func inFlightRequestsFinishAndNewConnectionsAreRefused() async throws {
        try await ProxyFixture.with(responder: Responder { _ in .delayed(.milliseconds(300), .ok("finished")) }) {
            proxy in
            try await withThrowingTaskGroup(of: TestHTTPResponse.self) { group in
                group.addTask {
                    try await proxy.send(.GET, "/slow")
                }
                try await waitUntil { proxy.upstream.requests.count == 1 }
                let drained = await proxy.listeners.shutdown(grace: .seconds(5))
                #expect(drained)
                let response = try await group.next()!
                #expect(response.status == 200)
                #expect(response.bodyText == "finished")
            }
            await #expect(throws: (any Error).self) {
                try await proxy.send(.GET, "/after")
            }
        }
    }

    @Test func graceRunsOutForRequestsThatDoNotFinish() async throws {
        try await ProxyFixture.with(responder: Responder { _ in .delayed(.seconds(30), .ok()) }) { proxy in
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    _ = try? await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                        client in
                        try await client.send(.GET, "/never")
                    }
                }
                try await waitUntil { proxy.upstream.requests.count == 1 }
                let drained = await proxy.listeners.shutdown(grace: .milliseconds(100))
                #expect(!drained)
                group.cancelAll()
            }
        }
    }
}
