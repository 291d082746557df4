import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy

/// After a last response sent while the client was still sending (a 413, a 408), bearerd
/// half-closes and drops what still comes, rather than closing with unread input: that close
/// makes the kernel send a reset, which can destroy the answer before the client reads it. On a
/// manual clock, so the test sees the half-close itself instead of racing a reset on a socket.
@Suite("Lingering close on a manual clock")
struct LingerTests {
    /// Records a half-close (an `EmbeddedChannel` only knows a full one) and lets the rest pass.
    final class HalfCloseRecorder: ChannelOutboundHandler {
        typealias OutboundIn = Never
        var outputClosed = false
        var fullCloses = 0

        func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
            if mode == .output {
                self.outputClosed = true
                promise?.succeed(())
                return
            }
            self.fullCloses += 1
            context.close(mode: mode, promise: promise)
        }
    }

    @Test func aClientStillSendingGetsTheRefusalAHalfCloseAndTwoSecondsToRead() throws {
        let proxy = try EmbeddedProxy("proxy:\n  max_request_body: 1KiB")
        let recorder = HalfCloseRecorder()
        try proxy.client.pipeline.syncOperations.addHandler(recorder, position: .first)
        try proxy.send("POST /x HTTP/1.1\r\nHost: h\r\nContent-Length: 4000000\r\n\r\n")
        try proxy.send(String(repeating: "b", count: 2048))
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 413 "), "\(answer.prefix(200))")
        #expect(answer.lowercased().contains("connection: close"))
        #expect(recorder.outputClosed, "the output was not half-closed after the last response")
        #expect(recorder.fullCloses == 0 && proxy.client.isActive, "closed with the body still coming")
        // What the client still sends is read and dropped: nothing more is answered or forwarded.
        for _ in 0..<16 { try proxy.send(String(repeating: "b", count: 64 << 10)) }
        #expect(try proxy.received().isEmpty)
        #expect(!(try proxy.upstream.sent().contains("bbbb")))
        proxy.wait(milliseconds: 1999)
        #expect(proxy.client.isActive)
        proxy.wait(milliseconds: 1)
        #expect(!proxy.client.isActive, "a client that never closes is closed after the linger time")
    }

    /// `curl` in a loop: a request that says `Connection: close` and came whole is answered and
    /// its connection closed at once, as nginx does, not half-closed and waited on (a shutdown,
    /// a wakeup, a read and a timer more for every such request).
    @Test func aClientThatSaidCloseAndSentItsRequestWholeIsClosedAtOnce() throws {
        let proxy = try EmbeddedProxy("")
        let recorder = HalfCloseRecorder()
        try proxy.client.pipeline.syncOperations.addHandler(recorder, position: .first)
        try proxy.send("GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        let answer = try proxy.received()
        #expect(answer.hasPrefix("HTTP/1.1 200 ") && answer.hasSuffix("ok"), "\(answer.prefix(200))")
        #expect(!recorder.outputClosed, "half-closed and lingered for a client that is done")
        #expect(recorder.fullCloses == 1 && !proxy.client.isActive)
    }

    /// The same client sending more after its request (which it said it would not) is lingered
    /// for: closing with its bytes unread would reset the connection under the answer.
    @Test func bytesAfterARequestThatSaidCloseAreLingeredFor() throws {
        let proxy = try EmbeddedProxy("")
        let recorder = HalfCloseRecorder()
        try proxy.client.pipeline.syncOperations.addHandler(recorder, position: .first)
        try proxy.send("GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /y HTTP/1.1\r\n")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try proxy.received().hasPrefix("HTTP/1.1 200 "))
        #expect(recorder.outputClosed && recorder.fullCloses == 0 && proxy.client.isActive)
        proxy.wait(milliseconds: 2000)
        #expect(!proxy.client.isActive, "closed after the linger time")
    }
}
