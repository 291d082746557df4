import NIOCore
import Testing

@testable import BearerdWire

@Suite("Parsing upstream responses")
struct ResponseParserTests {
    struct Parsed {
        var heads: [ResponseHead] = []
        var body = ""
        var ended = false
        var endsAtClose = false
    }

    /// Feeds `text` in reads of `step` bytes, keeping unparsed bytes as UpstreamConnection does.
    static func parse(_ text: String, toHEAD: Bool = false, step: Int = .max) throws -> Parsed {
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: toHEAD)
        var result = Parsed()
        var pending = ByteBuffer()
        var input = ByteBuffer(string: text)
        while input.readableBytes > 0 && !result.ended {
            var read = input.readSlice(length: min(step, input.readableBytes))!
            pending.writeBuffer(&read)
            while !result.ended, let part = try parser.next(from: &pending) {
                switch part {
                case .head(let head): result.heads.append(head)
                case .body(let bytes): result.body += String(buffer: bytes)
                case .end: result.ended = true
                }
            }
            pending.discardReadBytes()
        }
        result.endsAtClose = parser.endsAtClose
        return result
    }

    static let chunked =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        + "5\r\nhello\r\n7;name=value\r\n, world\r\n0\r\nX-Checksum: 1\r\n\r\n"

    @Test(arguments: [1, 2, 3, 7, 1000])
    func everySplitOfTheInputGivesTheSameParts(step: Int) throws {
        let fixed = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world", step: step)
        #expect(fixed.heads.map(\.status) == [200] && fixed.body == "hello world" && fixed.ended)
        let chunked = try Self.parse(Self.chunked, step: step)
        #expect(chunked.heads.first?.isChunked == true)
        #expect(chunked.body == "hello, world", "chunk framing and extensions removed; trailers dropped")
        #expect(chunked.ended)
        let bareLF = try Self.parse("HTTP/1.1 200 OK\nContent-Length: 2\n\nok", step: step)
        #expect(bareLF.body == "ok" && bareLF.ended)
    }

    @Test func responsesWithoutABody() throws {
        let head = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", toHEAD: true)
        #expect(head.ended && head.body.isEmpty, "a response to HEAD has no body, whatever its length says")
        #expect(try Self.parse("HTTP/1.1 204 No Content\r\n\r\n").ended)
        #expect(try Self.parse("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n").ended)
        #expect(try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n").ended)
    }

    @Test func aBodyWithoutLengthOrChunkingEndsWithTheConnection() throws {
        let parsed = try Self.parse("HTTP/1.1 200 OK\r\n\r\nuntil the end")
        #expect(parsed.body == "until the end" && !parsed.ended && parsed.endsAtClose)
        #expect(parsed.heads.first?.keepAlive == false)
    }

    @Test func informationalResponsesAreDropped() throws {
        let parsed = try Self.parse(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
            step: 5
        )
        #expect(parsed.heads.map(\.status) == [200] && parsed.body == "x")
    }

    @Test func keepAliveFollowsVersionAndConnection() throws {
        func keepAlive(_ head: String) throws -> Bool? {
            try Self.parse(head + "Content-Length: 0\r\n\r\n").heads.first?.keepAlive
        }
        #expect(try keepAlive("HTTP/1.1 200 OK\r\n") == true)
        #expect(try keepAlive("HTTP/1.1 200 OK\r\nConnection: close\r\n") == false)
        #expect(try keepAlive("HTTP/1.0 200 OK\r\n") == false)
        #expect(try keepAlive("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\n") == true)
        let options = try Self.parse("HTTP/1.1 200 OK\r\nConnection: keep-alive, X-Hop\r\nContent-Length: 0\r\n\r\n")
        #expect(options.heads.first?.connectionOptions.count == 1)
    }

    @Test func fieldsAndReasonAreWhereTheParserSaysTheyAre() throws {
        let head = try #require(
            try Self.parse("HTTP/1.1 404 Not Found\r\nX-A:  spaced value \t\r\nContent-Length: 0\r\n\r\n").heads.first
        )
        let text = String(buffer: head.bytes)
        func slice(_ range: Range<Int>) -> String {
            String(decoding: Array(text.utf8)[range], as: UTF8.self)
        }
        #expect(slice(head.reason) == "Not Found")
        #expect(head.fields.map { slice($0.name) } == ["X-A", "Content-Length"])
        #expect(head.fields.map { slice($0.value) } == ["spaced value", "0"])
        #expect(try Self.parse("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n").heads.first?.reason.isEmpty == true)
    }

    @Test(arguments: [
        ("HTTP/2.0 200 OK\r\n\r\n", "not HTTP/1.x"),
        ("HTTP/1.2 200 OK\r\n\r\n", "not HTTP/1.0 or HTTP/1.1"),
        ("ICY 200 OK\r\n\r\n", "not HTTP/1.x"),
        ("HTTP/1.1 20 OK\r\n\r\n", "three digits"),
        ("HTTP/1.1 2000 OK\r\n\r\n", "three digits"),
        ("HTTP/1.1 099 Low\r\n\r\n", "below 100"),
        ("HTTP/1.1 101 Switching Protocols\r\n\r\n", "101"),
        ("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n", "obs-fold"),
        ("HTTP/1.1 200 OK\r\nX-A : 1\r\n\r\n", "not a token"),
        ("HTTP/1.1 200 OK\r\n: 1\r\n\r\n", "without a name"),
        ("HTTP/1.1 200 OK\r\nX-A: a\u{1}b\r\n\r\n", "control character"),
        ("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "bare CR"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", "both"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", "disagree"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n", "not one number"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "not one number"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "not one number"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "transfer coding"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "transfer coding"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", "without a size"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\n", "not hexadecimal"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000\r\n", "15 hex digits"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", "longer than its size"),
    ])
    func malformedResponsesAreErrorsNotGuesses(input: String, expected: String) {
        #expect {
            _ = try Self.parse(input)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func sameContentLengthRepeatedIsOneLength() throws {
        let parsed = try Self.parse("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nok")
        #expect(parsed.heads.first?.contentLength == 2 && parsed.body == "ok")
    }

    @Test func anEndlessHeadIsCutOff() {
        let huge = "HTTP/1.1 200 OK\r\n" + String(repeating: "X-Filler: 0123456789\r\n", count: 13_000)
        #expect(throws: ProxyError.self) { _ = try Self.parse(huge, step: 64 * 1024) }
    }
}

@Suite("Parsing upstream responses: random input")
struct ResponseParserRandomTests {
    /// Random bytes, and random mutations of valid responses, in random splits: the parser
    /// returns parts or throws, never crashes, never hangs, and never hands out more body bytes
    /// than it was given.
    @Test func randomInputNeverCrashesTheParser() {
        var generator = SystemRandomNumberGenerator()
        let seeds = [
            ResponseParserTests.chunked,
            "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
            "HTTP/1.0 200 OK\r\n\r\nuntil close",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
        ]
        for round in 0..<5000 {
            var bytes: [UInt8]
            if round % 2 == 0 {
                bytes = (0..<Int.random(in: 0..<200, using: &generator)).map { _ in
                    UInt8.random(in: 0...255, using: &generator)
                }
            } else {
                bytes = Array(seeds[round % seeds.count].utf8)
                for _ in 0..<Int.random(in: 1...4, using: &generator) where !bytes.isEmpty {
                    bytes[Int.random(in: 0..<bytes.count, using: &generator)] = UInt8.random(
                        in: 0...255,
                        using: &generator
                    )
                }
            }
            var parser = ResponseParser()
            parser.expectResponse(toHEAD: round % 7 == 0)
            var pending = ByteBuffer()
            var input = ByteBuffer(bytes: bytes)
            var bodyBytes = 0
            reading: while input.readableBytes > 0 {
                var read = input.readSlice(length: min(Int.random(in: 1...64, using: &generator), input.readableBytes))!
                pending.writeBuffer(&read)
                do {
                    while let part = try parser.next(from: &pending) {
                        if case .body(let body) = part { bodyBytes += body.readableBytes }
                        if case .end = part { break reading }
                    }
                } catch {
                    break reading
                }
                pending.discardReadBytes()
            }
            #expect(bodyBytes <= bytes.count)
        }
    }
}
