/// The HTTP version a message's start line names (RFC 9112 §2.3): 1.0 or 1.1 once parsed, the
/// only ones bearerd speaks.
package struct WireVersion: Hashable, Sendable, CustomStringConvertible {
    @usableFromInline let storedMajor: UInt8
    @usableFromInline let storedMinor: UInt8

    @inlinable
    package init(major: Int, minor: Int) {
        self.storedMajor = UInt8(major)
        self.storedMinor = UInt8(minor)
    }

    @inlinable package var major: Int { Int(self.storedMajor) }
    @inlinable package var minor: Int { Int(self.storedMinor) }

    @inlinable package static var http1_0: Self { Self(major: 1, minor: 0) }
    @inlinable package static var http1_1: Self { Self(major: 1, minor: 1) }

    package var description: String { "HTTP/\(self.major).\(self.minor)" }
}
