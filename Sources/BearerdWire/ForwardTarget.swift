import NIOCore

/// The request target bearerd forwards, once checked.
///
/// Most targets are canonical as the client sent them (``CanonicalTarget/canonicalPathLength(_:)``
/// on the head's bytes): those are forwarded from the head's own bytes, with no string made of
/// them, so a target longer than a small string costs no allocation per request. The others are
/// rewritten into their canonical form by ``CanonicalTarget``.
package enum ForwardTarget: Equatable {
    /// Canonical as sent: the head's `target` bytes, of which the first `pathLength` are the path.
    case asSent(pathLength: Int)
    /// Rewritten into its canonical form.
    case rewritten(CanonicalTarget)

    /// The target of `head` to forward, or why it is refused.
    package static func of(_ head: RequestHead, allowPathParams: Bool) -> Parsed<ForwardTarget> {
        let pathLength = head.bytes.withUnsafeReadableBytes { raw in
            CanonicalTarget.canonicalPathLength(UnsafeRawBufferPointer(rebasing: raw[head.target]))
        }
        if let pathLength { return .parsed(.asSent(pathLength: pathLength)) }
        return CanonicalTarget.parse(head.uri, allowPathParams: allowPathParams).map { .rewritten($0) }
    }

    /// Writes the target (after the upstream's base path) into the upstream request line.
    package func write(of head: RequestHead, into buffer: inout ByteBuffer) {
        switch self {
        case .asSent:
            head.bytes.withUnsafeReadableBytes { raw in
                _ = buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.target]))
            }
        case .rewritten(let canonical):
            buffer.writeString(canonical.target)
        }
    }

    /// The path, for the access lists and the DPoP proof.
    package func path(of head: RequestHead) -> String {
        switch self {
        case .asSent(let pathLength):
            head.bytes.withUnsafeReadableBytes { raw in
                let start = head.target.lowerBound
                return String(
                    decoding: UnsafeRawBufferPointer(rebasing: raw[start..<start + pathLength]),
                    as: UTF8.self
                )
            }
        case .rewritten(let canonical):
            canonical.path
        }
    }
}
