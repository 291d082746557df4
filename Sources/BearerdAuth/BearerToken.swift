/// An access token to send upstream as `Authorization: Bearer <value>`.
///
/// Its `description` is redacted, so interpolating a token into a log line or an error message
/// never prints it.
package struct BearerToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The raw token. Read it only to put it on the wire.
    package let value: String
    /// `Bearer <value>`, built once so the data path does not concatenate per request.
    package let authorizationHeaderValue: String

    /// Wraps a raw token.
    package init(_ value: String) {
        self.value = value
        self.authorizationHeaderValue = "Bearer " + value
    }

    /// Always redacted.
    package var description: String { "BearerToken(redacted, \(self.value.utf8.count) bytes)" }
    /// Always redacted.
    package var debugDescription: String { self.description }

    /// Whether `value` can be sent in an HTTP header: RFC 6750 `b64token` characters only, so a
    /// token can never smuggle a CR/LF or another header into the upstream request.
    package static func isValidTokenValue(_ value: String) -> Bool {
        guard !value.isEmpty else { return false }
        return value.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                return true
            case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"),
                UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                return true
            default:
                return false
            }
        }
    }
}
