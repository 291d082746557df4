import BearerdWire
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// The data path's own request parser (`RequestParser`) against llhttp (NIO's
/// `HTTPRequestDecoder`, which bearerd used before), on the same bytes: byte 0 is the size of the
/// reads the parser gets (1 to 256); llhttp gets the rest at once. Its promise: every request the
/// parser takes, llhttp takes too, with the same method, target, version, fields and body bytes,
/// and the same number of requests before it. The parser may refuse more than llhttp; never less,
/// and it never frames a request differently (that is how requests are smuggled).
enum RequestTarget {
    struct Request: Equatable {
        var method: String
        var uri: String
        var minor: Int
        var fields: [String]
        var body: [UInt8] = []
        var ended = false
    }

    static let limits = RequestLimits(maxRequestLine: 8192, maxHeaderSize: 32768, maxHeaderCount: 100)

    static func run(_ bytes: [UInt8]) -> String {
        guard bytes.count >= 2 else { return "short" }
        let step = Int(bytes[0]) + 1
        let input = Array(bytes.dropFirst())
        let (ours, refused) = Self.parse(input, step: step)
        let (theirs, failed) = Self.llhttp(input)
        for (index, request) in ours.enumerated() {
            promise(index < theirs.count, "llhttp takes every request head the parser takes")
            let other = theirs[index]
            promise(request.method == other.method, "the same method")
            promise(request.uri == other.uri, "the same target")
            promise(request.minor == other.minor, "the same version")
            promise(request.fields == other.fields, "the same fields")
            if request.ended {
                promise(other.ended, "llhttp ends every request the parser ends")
                promise(request.body == other.body, "the same body bytes")
            } else if !failed {
                // (After an error NIO drops the body parts of the same read: nothing to compare.)
                promise(other.body.starts(with: request.body), "the same body bytes so far")
            }
        }
        if refused { return "refused" }
        return ours.last?.ended == true ? "ended" : "incomplete"
    }

    /// The parser, fed in reads of `step` bytes as a connection feeds it.
    static func parse(_ input: [UInt8], step: Int) -> (requests: [Request], refused: Bool) {
        var parser = RequestParser(limits: Self.limits)
        var pending = ByteBuffer()
        var requests: [Request] = []
        var offset = 0
        while offset < input.count {
            let end = min(offset + step, input.count)
            pending.writeBytes(input[offset..<end])
            offset = end
            do {
                while let part = try parser.next(from: &pending) {
                    switch part {
                    case .head(let head):
                        promise(requests.last?.ended ?? true, "a head only after the previous request ended")
                        requests.append(
                            Request(
                                method: head.method.rawValue,
                                uri: head.uri,
                                minor: head.version.minor,
                                fields: head.fieldList
                            )
                        )
                    case .body(let slice):
                        promise(!(requests.last?.ended ?? true), "a body only inside a request")
                        requests[requests.count - 1].body += slice.readableBytesView
                    case .end:
                        promise(!(requests.last?.ended ?? true), "an end only inside a request")
                        requests[requests.count - 1].ended = true
                    }
                }
            } catch {
                return (requests, true)
            }
            pending.discardReadBytes()
        }
        return (requests, false)
    }

    /// llhttp through NIO's decoder, all bytes at once: what it parsed, and whether it failed.
    static func llhttp(_ input: [UInt8]) -> (requests: [Request], failed: Bool) {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(HTTPRequestDecoder()))
        defer { _ = try? channel.finish() }
        var failed = false
        do {
            try channel.writeInbound(ByteBuffer(bytes: input))
        } catch {
            failed = true
        }
        var requests: [Request] = []
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let head):
                requests.append(
                    Request(
                        method: head.method.rawValue,
                        uri: head.uri,
                        minor: head.version.minor,
                        fields: head.headers.map { "\($0.name.lowercased()):\(Self.trimmed($0.value))" }
                    )
                )
            case .body(let buffer):
                requests[requests.count - 1].body += buffer.readableBytesView
            case .end:
                requests[requests.count - 1].ended = true
            }
        }
        return (requests, failed)
    }

    static func trimmed(_ value: String) -> String {
        var value = Substring(value)
        while let last = value.last, last == " " || last == "\t" { value.removeLast() }
        while let first = value.first, first == " " || first == "\t" { value.removeFirst() }
        return String(value)
    }
}
