import NIOCore
import Testing

@testable import BearerdWire

/// Small chunks that come together leave the parsers as one piece, so a count of body bytes
/// (the held parts, the retry buffer, a held 401, the writes) is a count of what is held: a
/// read of one-byte chunks is not thousands of slices, each holding on to its read buffer
/// (issue 35).
@Suite("Small chunks are joined")
struct BodyJoinTests {
    /// `count` one-byte chunks: `1\r\nX\r\n` each, X cycling through the alphabet.
    static func oneByteChunks(_ count: Int) -> (wire: String, payload: String) {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        var wire = ""
        var payload = ""
        for index in 0..<count {
            let letter = letters[index % letters.count]
            wire += "1\r\n\(letter)\r\n"
            payload.append(letter)
        }
        return (wire, payload)
    }

    /// The body pieces the request parser gives for one read of `body` (chunked).
    static func requestPieces(_ body: String) throws -> [ByteBuffer] {
        var parser = RequestParser(limits: RequestHead.testLimits)
        var buffer = ByteBuffer(string: "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
        var pieces: [ByteBuffer] = []
        while let part = try parser.next(from: &buffer) {
            if case .body(let piece) = part { pieces.append(piece) }
        }
        return pieces
    }

    @Test func aReadOfOneByteChunksIsOnePiecePerJoinLimit() throws {
        let (wire, payload) = Self.oneByteChunks(20_000)
        let pieces = try Self.requestPieces(wire + "0\r\n\r\n")
        #expect(pieces.map { String(buffer: $0) }.joined() == payload)
        // 20 000 bytes in pieces of at most 8 KiB: three, not 20 000.
        #expect(pieces.count == 3)
        #expect(pieces.allSatisfy { $0.readableBytes <= BodyFramer.joinLimit })
    }

    @Test func aLargeChunkAfterSmallOnesIsNotCopiedWhole() throws {
        let large = String(repeating: "L", count: 100_000)
        let wire = "1\r\na\r\n2\r\nbc\r\n" + String(large.utf8.count, radix: 16) + "\r\n" + large + "\r\n0\r\n\r\n"
        let pieces = try Self.requestPieces(wire)
        #expect(pieces.map { String(buffer: $0) }.joined() == "abc" + large)
        // The small ones and the start of the large one fill one joined piece; the rest of the
        // large chunk is the read's own bytes, uncopied.
        #expect(pieces.count == 2)
        #expect(pieces[0].readableBytes == BodyFramer.joinLimit)
        #expect(pieces[1].readableBytes == 100_003 - BodyFramer.joinLimit)
    }

    @Test func largeChunksStayOnePieceEach() throws {
        let chunk = String(repeating: "x", count: BodyFramer.joinLimit)
        let one = String(chunk.utf8.count, radix: 16) + "\r\n" + chunk + "\r\n"
        let pieces = try Self.requestPieces(one + one + "0\r\n\r\n")
        #expect(pieces.map(\.readableBytes) == [BodyFramer.joinLimit, BodyFramer.joinLimit])
    }

    @Test func theEndStillFollowsAJoinedPiece() throws {
        var parser = RequestParser(limits: RequestHead.testLimits)
        let (wire, payload) = Self.oneByteChunks(10)
        var buffer = ByteBuffer(
            string: "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n" + wire + "0\r\n\r\n"
                + "GET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        )
        var parts: [String] = []
        while let part = try parser.next(from: &buffer) {
            switch part {
            case .head(let head): parts.append("head \(head.uri)")
            case .body(let piece): parts.append("body " + String(buffer: piece))
            case .end: parts.append("end")
            }
        }
        #expect(parts == ["head /a", "body " + payload, "end", "head /b", "end"])
    }

    @Test func aResponseOfOneByteChunksIsJoinedToo() throws {
        let (wire, payload) = Self.oneByteChunks(5_000)
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false)
        let head = "HTTP/1.1 401 Unauthorized\r\nTransfer-Encoding: chunked\r\n\r\n"
        var buffer = ByteBuffer(string: head + wire + "0\r\n\r\n")
        var pieces: [ByteBuffer] = []
        var ended = false
        while !ended, let part = try parser.next(from: &buffer) {
            switch part {
            case .head: break
            case .body(let piece): pieces.append(piece)
            case .end: ended = true
            }
        }
        #expect(ended)
        #expect(pieces.count == 1)
        #expect(pieces.map { String(buffer: $0) }.joined() == payload)
    }

    /// A small seeded generator (xorshift64*), so that a failure names the body it failed on.
    struct Seeded: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            self.state ^= self.state >> 12
            self.state ^= self.state << 25
            self.state ^= self.state >> 27
            return self.state &* 2_685_821_657_736_338_717
        }
    }

    /// Random chunkings, from one-byte chunks to chunks far over the limit, in one read: the
    /// pieces give the body back exactly, and every piece but the last is at least the join
    /// limit (no run of small pieces is left unjoined).
    @Test(arguments: 1...200)
    func anyChunkingGivesTheBodyInFewPieces(seed: UInt64) throws {
        var random = Seeded(state: seed &* 0x9E37_79B9_7F4A_7C15 | 1)
        var wire = ""
        var payload = ""
        for _ in 0..<Int.random(in: 1...400, using: &random) {
            let large = 3 * BodyFramer.joinLimit
            let size =
                Bool.random(using: &random)
                ? Int.random(in: 1...16, using: &random) : Int.random(in: 1...large, using: &random)
            let letter = Character(UnicodeScalar(UInt8.random(in: 97...122, using: &random)))
            let data = String(repeating: letter, count: size)
            wire += String(size, radix: 16) + "\r\n" + data + "\r\n"
            payload += data
        }
        let pieces = try Self.requestPieces(wire + "0\r\n\r\n")
        #expect(pieces.map { String(buffer: $0) }.joined() == payload, "seed \(seed)")
        #expect(pieces.dropLast().allSatisfy { $0.readableBytes >= BodyFramer.joinLimit }, "seed \(seed)")
    }
}
