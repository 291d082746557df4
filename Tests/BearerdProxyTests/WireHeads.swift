import NIOCore
import NIOHTTP1

@testable import BearerdProxy
@testable import BearerdWire

/// Reads back the heads bearerd writes as bytes, for tests that check their fields.
enum WireHeads {
    static func lines(_ buffer: ByteBuffer) -> (start: [Substring], headers: HTTPHeaders) {
        let text = String(buffer: buffer)
        precondition(text.hasSuffix("\r\n\r\n"), "a head ends with an empty line")
        // "\r\n" is one Character: dropping two drops the empty line and the last line's end.
        var lines = text.dropLast(2).split(separator: "\r\n", omittingEmptySubsequences: false)
        let start = lines.removeFirst().split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        var headers = HTTPHeaders()
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), line[colon...].hasPrefix(": ") else {
                preconditionFailure("not a header line: \(line.debugDescription) in \(text.debugDescription)")
            }
            headers.add(name: String(line[..<colon]), value: String(line[colon...].dropFirst(2)))
        }
        return (start, headers)
    }

    static func request(_ buffer: ByteBuffer) -> HTTPRequestHead {
        let (start, headers) = Self.lines(buffer)
        precondition(start[2] == "HTTP/1.1")
        return HTTPRequestHead(
            version: .http1_1,
            method: HTTPMethod(rawValue: String(start[0])),
            uri: String(start[1]),
            headers: headers
        )
    }

    static func response(_ buffer: ByteBuffer) -> HTTPResponseHead {
        let (start, headers) = Self.lines(buffer)
        return HTTPResponseHead(
            version: start[0] == "HTTP/1.0" ? .http1_0 : .http1_1,
            status: HTTPResponseStatus(statusCode: Int(start[1])!),
            headers: headers
        )
    }

    /// An upstream response head as ``ResponseParser`` hands it over.
    static func parsed(_ head: HTTPResponseHead) throws -> ResponseHead {
        var buffer = ByteBuffer()
        WireFormat.writeResponseHead(head, into: &buffer)
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: false)
        guard case .head(let parsed) = try parser.next(from: &buffer) else {
            preconditionFailure("no head in \(String(buffer: buffer))")
        }
        return parsed
    }

    /// What the client gets for `head` from the upstream, as ``ProxyHandler`` writes it.
    static func clientResponse(
        _ head: HTTPResponseHead,
        for request: HTTPRequestHead,
        close: Bool
    ) throws
        -> HTTPResponseHead
    {
        let parsed = try Self.parsed(head)
        var out = ByteBuffer()
        let request = try RequestHead(request)
        HeaderRewriter.clientResponse(
            parsed,
            version: request.version,
            framing: HeaderRewriter.clientFraming(parsed, method: request.method, version: request.version),
            close: close,
            into: &out
        )
        return Self.response(out)
    }
}
