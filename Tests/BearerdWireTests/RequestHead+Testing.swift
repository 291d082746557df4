import NIOCore

@testable import BearerdWire

extension RequestHead {
    /// Limits no test head reaches.
    static let testLimits = RequestLimits(maxRequestLine: 8192, maxHeaderSize: 65536, maxHeaderCount: 200)

    /// `GET target HTTP/1.1` with `host: h`, as a client sends it, parsed as the proxy parses it.
    static func get(_ target: String) throws(ProxyError) -> RequestHead {
        try RequestHead.parse(ByteBuffer(string: "GET \(target) HTTP/1.1\r\nhost: h\r\n\r\n"), limits: Self.testLimits)
    }
}
