import NIOCore
import Testing

@testable import BearerdWire

@Suite("The request parser")
struct RequestParserTests {
    /// What the parser gives for `text` fed in reads of `step` bytes: one line per part.
    static func parse(
        _ text: String,
        step: Int = .max,
        limits: RequestLimits = RequestHead.testLimits
    ) throws(ProxyError) -> [String] {
        var parser = RequestParser(limits: limits)
        var pending = ByteBuffer()
        var parts: [String] = []
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let end = min(bytes.count, offset + min(step, bytes.count))
            pending.writeBytes(bytes[offset..<end])
            offset = end
            while let part = try parser.next(from: &pending) {
                switch part {
                case .head(let head):
                    parts.append("\(head.method.rawValue) \(head.uri) 1.\(head.version.minor) \(head.fieldList)")
                case .body(let body):
                    // Adjacent body pieces are one: how reads split them is not the parser's.
                    if let last = parts.last, last.hasPrefix("body ") {
                        parts[parts.count - 1] = last + String(buffer: body)
                    } else {
                        parts.append("body " + String(buffer: body))
                    }
                case .end:
                    parts.append("end")
                }
            }
        }
        return parts
    }

    static let pipelined =
        "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
        + "PUT /b?x=1 HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3;n=v\r\nabc\r\n2;q=\"a b\"\r\nde\r\n0\r\nT: x\r\n\r\n"
        + "\r\nGET /c HTTP/1.0\r\nConnection: keep-alive\r\nX-Empty:\r\n\r\n"

    @Test(arguments: [1, 2, 3, 7, 64, 1000])
    func everySplitOfTheInputGivesTheSameParts(step: Int) throws {
        #expect(
            try Self.parse(Self.pipelined, step: step) == [
                "POST /a 1.1 [\"host:h\", \"content-length:5\"]", "body hello", "end",
                "PUT /b?x=1 1.1 [\"host:h\", \"transfer-encoding:chunked\"]", "body abcde", "end",
                "GET /c 1.0 [\"connection:keep-alive\", \"x-empty:\"]", "end",
            ]
        )
    }

    @Test func nothingIsParsedAfterAnUpgradeOrALastRequest() throws {
        let upgrade = "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\u{1}frame"
        #expect(try Self.parse(upgrade).count == 2)
        let close = "GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGET /b HTTP/1.1\r\nHost: h\r\n\r\n"
        #expect(try Self.parse(close) == ["GET /a 1.1 [\"host:h\", \"connection:close\"]", "end"])
        let old = "GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n"
        #expect(try Self.parse(old) == ["GET /a 1.0 []", "end"])
    }

    /// Each is refused, as llhttp refuses it (the `request` fuzz target checks the rest).
    @Test(arguments: [
        ("GET /a HTTP/1.1\nHost: h\n\n", "LF without CR"),
        ("GET /a HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", "CR without LF"),
        ("GET /a HTTP/1.1\r\nHost: h\r\nX: a\0b\r\n\r\n", "NUL"),
        ("GET /a HTTP/1.1\r\nX: a\r\n folded\r\n\r\n", "obs-fold"),
        ("GET /a HTTP/1.1\r\nX : a\r\n\r\n", "not a token"),
        ("GET /a HTTP/1.1\r\n: a\r\n\r\n", "without a name"),
        ("GET /a HTTP/1.1\r\nX: a\u{7F}\r\n\r\n", "control character"),
        ("get /a HTTP/1.1\r\n\r\n", "not a known HTTP method"),
        ("FOO /a HTTP/1.1\r\n\r\n", "not a known HTTP method"),
        ("GET /a b HTTP/1.1\r\n\r\n", "not `method target HTTP/1.x`"),
        ("GET /a HTTP/2.0\r\n\r\n", "not `method target HTTP/1.x`"),
        ("GET /a HTTP/1.2\r\n\r\n", "other than 1.0 and 1.1"),
        ("GET  /a HTTP/1.1\r\n\r\n", "not origin-form"),
        ("GET http://evil/ HTTP/1.1\r\n\r\n", "not origin-form"),
        ("CONNECT evil:443 HTTP/1.1\r\n\r\n", "CONNECT"),
        ("POST /a HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx", "more than one Content-Length"),
        ("POST /a HTTP/1.1\r\nContent-Length: +1\r\n\r\nx", "not one number"),
        ("POST /a HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n\r\n", "not one number"),
        ("POST /a HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "both"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "chunked"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", "chunked"),
        ("POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "HTTP/1.0"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n", "not hexadecimal"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;\u{80}\r\nabc\r\n0\r\n\r\n", "without a name"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n0\r\n\r\n", "longer than its size"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", "LF without CR"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nbad trailer\r\n\r\n", "not a token"),
        ("POST /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: 1\r\n\r\n", "framing field"),
        ("\r\n\r\n\r\n\r\n\r\nGET /a HTTP/1.1\r\n\r\n", "empty lines"),
    ])
    func malformedRequestsAreRefused(input: String, expected: String) {
        #expect {
            _ = try Self.parse(input)
        } throws: { error in
            "\(error)".contains(expected)
        }
    }

    @Test func limitsAreHeldAsTheBytesArrive() {
        let limits = RequestLimits(maxRequestLine: 100, maxHeaderSize: 200, maxHeaderCount: 3)
        func refusal(_ text: String, step: Int = .max) -> ProxyError? {
            do {
                _ = try Self.parse(text, step: step, limits: limits)
                return nil
            } catch {
                return error
            }
        }
        // No end of line yet: refused as soon as the line is over its limit.
        #expect(refusal("GET /" + String(repeating: "a", count: 200)) == .targetTooLong)
        // Byte by byte as well: each byte is looked at once, and the limit holds the same.
        #expect(refusal("GET /" + String(repeating: "a", count: 200), step: 1) == .targetTooLong)
        #expect(refusal("GET /a HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", step: 1) == .tooManyFields)
        #expect(refusal("GET /a HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n") == .tooManyFields)
        #expect(refusal("GET /a HTTP/1.1\r\nA: \(String(repeating: "v", count: 250))\r\n\r\n") == .fieldsTooLarge)
        #expect(refusal("GET /a HTTP/1.1\r\nA: " + String(repeating: " ", count: 5000)) == .headTooLarge)
        #expect(refusal("GET /a HTTP/1.1\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n") == nil)
    }

    @Test func randomInputNeverCrashesTheParser() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("GET /aHTP1.0\r\n:;= chunkedContent-Length0123456789\t\u{0}".utf8)
        for _ in 0..<2000 {
            let count = Int.random(in: 0..<200, using: &generator)
            let bytes = (0..<count).map { _ in alphabet.randomElement(using: &generator)! }
            _ = try? Self.parse(String(decoding: bytes, as: UTF8.self), step: Int.random(in: 1...16))
        }
    }
}
