import BearerdTestSupport
import NIOCore
import NIOHTTP1
import Testing

/// Bodies stream through bearerd with backpressure: its memory does not grow with body size,
/// and a slow client slows the upstream instead of filling memory. The proxy, the upstream and
/// the client share this process, so the RSS measured bounds bearerd's own from above.
@Suite("Streaming large bodies", .serialized)
struct ProxyStreamingTests {
    static let gibibyte = 1 << 30
    static let memoryBound = 64 << 20

    @Test func aOneGiBDownloadKeepsMemoryFlat() async throws {
        try await ProxyFixture.with(
            yaml: "log:\n  access: false",
            responder: Responder { _ in .stream(bytes: Self.gibibyte) }
        ) {
            proxy in
            // Warm up the allocator and the pools first, so the baseline is a running proxy's.
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                _ = try await client.send(.GET, "/warm")
            }
            let before = residentSetSize()
            var peak = before
            let response = try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                client in
                var parts = 0
                return try await client.send(.GET, "/big") { _ in
                    parts += 1
                    if parts % 256 == 0 { peak = max(peak, residentSetSize()) }
                }
            }
            peak = max(peak, residentSetSize())
            #expect(response.status == 200)
            #expect(response.bodyBytes == Self.gibibyte)
            let growth = peak - before
            print("1 GiB download: RSS grew by \(growth >> 10) KiB (bound \(Self.memoryBound >> 20) MiB)")
            #expect(growth < Self.memoryBound)
        }
    }

    @Test func aOneGiBUploadKeepsMemoryFlat() async throws {
        try await ProxyFixture.with(yaml: "log:\n  access: false", responder: Responder { .ok("\($0.bodyBytes)") }) {
            proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                _ = try await client.send(.GET, "/warm")
            }
            let before = residentSetSize()
            let sampler = Task {
                var peak = 0
                while !Task.isCancelled {
                    peak = max(peak, residentSetSize())
                    try? await Task.sleep(for: .milliseconds(20))
                }
                return peak
            }
            let response = try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) {
                client in
                try await client.send(
                    .PUT,
                    "/upload",
                    headers: ["content-length": String(Self.gibibyte)],
                    body: GeneratedBody(count: Self.gibibyte)
                )
            }
            sampler.cancel()
            let peak = max(await sampler.value, residentSetSize())
            #expect(response.status == 200)
            #expect(response.bodyText == String(Self.gibibyte))
            let growth = peak - before
            print("1 GiB upload: RSS grew by \(growth >> 10) KiB (bound \(Self.memoryBound >> 20) MiB)")
            #expect(growth < Self.memoryBound)
        }
    }

    @Test func aSlowClientSlowsTheUpstream() async throws {
        let total = 512 << 20
        try await ProxyFixture.with(responder: Responder { _ in .stream(bytes: total) }) { proxy in
            try await TestHTTPClient.withConnection(to: .tcp(port: proxy.port), group: proxy.group) { client in
                var received = 0
                var checked = false
                _ = try await client.send(.GET, "/big") { part in
                    received += part.readableBytes
                    if !checked && received >= 1 << 20 {
                        // Stop reading for a while: the upstream may only get as far as the
                        // socket and channel buffers on the way allow, not the whole body.
                        checked = true
                        try await Task.sleep(for: .milliseconds(500))
                        let streamed = proxy.upstream.streamedBytes
                        print(
                            "slow client: read \(received >> 20) MiB, upstream had written \(streamed >> 20) MiB of \(total >> 20) MiB"
                        )
                        #expect(streamed - received < 48 << 20)
                    }
                }
                #expect(received == total)
            }
        }
    }
}
