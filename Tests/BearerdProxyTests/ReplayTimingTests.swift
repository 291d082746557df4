import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// A request replayed on a new connection after a pooled one turned out closed, on a manual clock.
@Suite("Replays on a manual clock")
struct ReplayTimingTests {
    /// A chunked request with an empty body ends with its last chunk; the replay must send it
    /// again, or the upstream waits for it until `upstream.response_timeout`.
    @Test func aReplayedChunkedRequestEndsWithItsLastChunk() throws {
        let proxy = try EmbeddedProxy("")
        try proxy.send("GET /a HTTP/1.1\r\nHost: h\r\n\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        _ = try proxy.upstream.sent()
        try proxy.send("PUT /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        let first = try proxy.upstream.sent()
        #expect(first.hasPrefix("PUT /b ") && first.hasSuffix("\r\n\r\n0\r\n\r\n"), "\(first)")
        // The pooled connection was closed by the upstream before it answered.
        try proxy.upstream.channels[0].close().wait()
        proxy.loop.run()
        #expect(proxy.upstream.channels.count == 2, "no replay on a new connection")
        let replayed = try proxy.upstream.sent()
        #expect(replayed.hasPrefix("PUT /b ") && replayed.hasSuffix("\r\n\r\n0\r\n\r\n"), "\(replayed)")
        try proxy.upstream.answer("HTTP/1.1 204 No Content\r\n\r\n")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 204 "))
    }
}
