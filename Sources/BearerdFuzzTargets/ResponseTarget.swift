import BearerdWire
import NIOCore

/// The data path's own parser of upstream responses (`ResponseParser`), fed as the upstream
/// connection feeds it: in reads of some size, unparsed bytes kept for the next read. Byte 0:
/// bit 0, the request was a HEAD; bit 1, it asked for an upgrade. Byte 1: the read size (1 to
/// 256). Its promises: one head, then body parts, then the end, and nothing after; nothing after
/// a 101; no body for a HEAD, a 204 or a 304; a Content-Length body of exactly that length; never
/// more body bytes than were given. A 101 is then judged as the answer to a WebSocket handshake
/// with RFC 6455's example key and its accept (``UpgradeOffer``): spliced only to `websocket`
/// (issue 35).
enum ResponseTarget {
    static let offer = UpgradeOffer(
        protocols: ["websocket"],
        webSocketKey: "dGhlIHNhbXBsZSBub25jZQ==",
        webSocketAccept: "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
    )

    static func run(_ bytes: [UInt8]) -> String {
        guard bytes.count >= 2 else { return "short" }
        let toHEAD = bytes[0] & 1 == 1
        let upgrade = bytes[0] & 2 == 2
        let step = Int(bytes[1]) + 1
        let input = bytes.dropFirst(2)
        var parser = ResponseParser()
        parser.expectResponse(toHEAD: toHEAD, upgrade: upgrade)
        var pending = ByteBuffer()
        var offset = input.startIndex
        var head: (status: Int, length: Int?, chunked: Bool)?
        var body = 0
        var outcome = "incomplete"
        reading: while offset < input.endIndex {
            let end = min(offset + step, input.endIndex)
            pending.writeBytes(input[offset..<end])
            offset = end
            do {
                while let part = try parser.next(from: &pending) {
                    switch part {
                    case .head(let parsed):
                        promise(head == nil, "one head per response")
                        promise((100...999).contains(parsed.status), "a three-digit status")
                        head = (parsed.status, parsed.contentLength, parsed.isChunked)
                        if parsed.status == 101 {
                            promise(upgrade, "a 101 only after a request that asked to switch")
                            promise((try? parser.next(from: &pending)) == nil, "nothing is parsed after a 101")
                            switch Self.offer.answer(to: parsed) {
                            case .splice(let name):
                                promise(name.lowercased() == "websocket", "a splice only to the protocol offered")
                                outcome = "switched"
                            case .broken:
                                outcome = "switch refused"
                            }
                            break reading
                        }
                    case .body(let slice):
                        promise(head != nil, "no body before the head")
                        body += slice.readableBytes
                        promise(body <= input.count, "no more body than was given")
                    case .end:
                        promise(head != nil, "no end before the head")
                        outcome = "ended"
                        break reading
                    }
                }
            } catch {
                return "refused"
            }
            pending.discardReadBytes()
        }
        if outcome == "ended", let head {
            if toHEAD || head.status == 204 || head.status == 304 {
                promise(body == 0, "no body for a HEAD, a 204 or a 304")
            } else if let length = head.length, !head.chunked {
                promise(body == length, "a Content-Length body of exactly that length")
            }
        }
        return outcome
    }
}
