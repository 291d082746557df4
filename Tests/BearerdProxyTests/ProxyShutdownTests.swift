import BearerdProxy
import BearerdTestSupport
import Foundation
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

    @Test func everyListenerStopsAndDrains() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path + "/p.sock"
        try await ProxyFixture.with(
            listen: ["unix:\(path)", "127.0.0.1:0"],
            responder: Responder { _ in .delayed(.milliseconds(300), .ok("finished")) }
        ) { proxy in
            try await withThrowingTaskGroup(of: TestHTTPResponse.self) { group in
                group.addTask {
                    try await TestHTTPClient.withConnection(to: .unix(path: path), group: proxy.group) { client in
                        try await client.send(.GET, "/slow")
                    }
                }
                try await waitUntil { proxy.upstream.requests.count == 1 }
                #expect(await proxy.listeners.shutdown(grace: .seconds(5)))
                let response = try await group.next()!
                #expect(response.bodyText == "finished")
            }
            // The second listener (TCP) must be closed too, not only the first.
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
