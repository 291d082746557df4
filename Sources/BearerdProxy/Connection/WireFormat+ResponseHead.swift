import BearerdWire
import NIOCore
import NIOHTTP1

extension WireFormat {
    /// A whole response head made by bearerd itself (its JSON answers), from NIOHTTP1's
    /// `HTTPResponseHead`, which ``ProxyFailure`` builds.
    static func writeResponseHead(_ head: HTTPResponseHead, into buffer: inout ByteBuffer) {
        Self.writeStatusLine(
            code: Int(head.status.code),
            reason: head.status.reasonPhrase,
            version: WireVersion(major: head.version.major, minor: head.version.minor),
            into: &buffer
        )
        for (name, value) in head.headers {
            Self.writeField(name, value, into: &buffer)
        }
        buffer.writeStaticString("\r\n")
    }
}
