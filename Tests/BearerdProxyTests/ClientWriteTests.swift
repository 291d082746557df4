import NIOCore
import NIOEmbedded
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// A small response leaves in one write, its head and body together; a large body, a body that
/// comes later, or the end alone never wait for each other.
@Suite("Writes to the client")
struct ClientWriteTests {
    static let yaml = "log:\n  access: false"

    /// Each buffer the client channel was given, as text, in order.
    static func writes(_ proxy: EmbeddedProxy) throws -> [String] {
        var writes: [String] = []
        while let buffer = try proxy.client.readOutbound(as: ByteBuffer.self) { writes.append(String(buffer: buffer)) }
        return writes
    }

    static func exchange(_ proxy: EmbeddedProxy, path: String = "/a") throws {
        try proxy.send("GET \(path) HTTP/1.1\r\nHost: h\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("GET \(path) HTTP/1.1\r\n"))
    }

    @Test func aSmallResponseIsOneWrite() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        for round in 0..<3 {
            try Self.exchange(proxy)
            let body = String(repeating: "x", count: 100) + "\(round)"
            try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: \(body.utf8.count)\r\n\r\n\(body)")
            let writes = try Self.writes(proxy).filter { !$0.isEmpty }
            #expect(writes.count == 1, "\(writes)")
            #expect(writes.first?.hasPrefix("HTTP/1.1 200 OK\r\n") == true)
            #expect(writes.first?.hasSuffix("\r\n\r\n\(body)") == true, "round \(round): \(writes)")
        }
    }

    @Test func aSmallChunkIsFramedBehindTheHead() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        try Self.exchange(proxy)
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        let writes = try Self.writes(proxy).filter { !$0.isEmpty }
        #expect(writes.first?.hasSuffix("\r\n\r\n5\r\nhello\r\n") == true, "\(writes)")
        #expect(writes.joined().hasSuffix("\r\n\r\n5\r\nhello\r\n0\r\n\r\n"), "\(writes)")
    }

    @Test func aLargeBodyIsNotCopiedBehindTheHead() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        try Self.exchange(proxy)
        let body = String(repeating: "y", count: WireFormat.copiedBodyLimit + 1)
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: \(body.utf8.count)\r\n\r\n\(body)")
        let writes = try Self.writes(proxy).filter { !$0.isEmpty }
        #expect(writes.count == 2)
        #expect(writes.first?.hasSuffix("\r\n\r\n") == true)
        #expect(writes.last == body)
    }

    @Test func aHeadWhoseBodyComesLaterLeavesAtOnce() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        try Self.exchange(proxy)
        // An event stream's head comes alone; the client must see it before any event.
        try proxy.upstream.answer(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
        )
        let head = try Self.writes(proxy).joined()
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n") && head.hasSuffix("\r\n\r\n"), "\(head)")
        // Each event after it is one write too: size line, bytes and CRLF in one buffer.
        for event in 1...3 {
            try proxy.upstream.answer("7\r\ndata: \(event)\r\n")
            #expect(try Self.writes(proxy) == ["7\r\ndata: \(event)\r\n"])
        }
    }

    @Test func aSmallChunkOfAnUploadIsOneWriteUpstream() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        try proxy.send("POST /up HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n")
        #expect(try proxy.upstream.sent().hasPrefix("POST /up HTTP/1.1\r\n"))
        let channel = try #require(proxy.upstream.channels.last)
        for piece in ["abc", "defgh"] {
            try proxy.send("\(piece.utf8.count)\r\n\(piece)\r\n")
            var writes: [String] = []
            while let buffer = try channel.readOutbound(as: ByteBuffer.self) { writes.append(String(buffer: buffer)) }
            #expect(writes == ["\(piece.utf8.count)\r\n\(piece)\r\n"])
        }
    }

    @Test func aBodylessResponseEndsWithItsHead() throws {
        let proxy = try EmbeddedProxy(Self.yaml)
        try Self.exchange(proxy)
        try proxy.upstream.answer("HTTP/1.1 204 No Content\r\n\r\n")
        let writes = try Self.writes(proxy).joined()
        #expect(writes.hasPrefix("HTTP/1.1 204 No Content\r\n") && writes.hasSuffix("\r\n\r\n"), "\(writes)")
        // The connection serves the next request.
        try Self.exchange(proxy, path: "/b")
        try proxy.upstream.answer("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        #expect(try Self.writes(proxy).joined().hasSuffix("\r\n\r\nok"))
    }
}
