import NIOCore
import NIOHTTP1

@testable import BearerdProxy
@testable import BearerdWire

extension RequestHead {
    /// Limits no test head reaches.
    static let testLimits = RequestLimits(maxRequestLine: 8192, maxHeaderSize: 65536, maxHeaderCount: 200)

    /// `head` as a client sends it, parsed as the proxy parses it.
    init(_ head: HTTPRequestHead, limits: RequestLimits = Self.testLimits) throws(ProxyError) {
        var bytes = ByteBuffer()
        bytes.writeString("\(head.method.rawValue) \(head.uri) HTTP/1.\(head.version.minor)\r\n")
        for (name, value) in head.headers { bytes.writeString("\(name): \(value)\r\n") }
        bytes.writeString("\r\n")
        self = try RequestHead.parse(bytes, limits: limits)
    }
}
