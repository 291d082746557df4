/// An access token to send upstream as `Authorization: Bearer <value>`.
///
/// Its `description` is redacted, so interpolating a token into a log line or an error message
/// never prints it.
///
/// Both strings sit in one immutable box: the data path copies a token a few times per request
/// (the exchange keeps the one its request went with), and a copy retains one reference instead
/// of two strings (counted with `scripts/bench-count`).
package struct BearerToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    private final class Storage: Sendable {
        let value: String
        let authorizationHeaderValue: String

        init(_ value: String) {
            self.value = value
            self.authorizationHeaderValue = "Bearer " + value
        }
    }

    private let storage: Storage

    /// The raw token. Read it only to put it on the wire.
    package var value: String { self.storage.value }
    /// `Bearer <value>`, built once so the data path does not concatenate per request.
    package var authorizationHeaderValue: String { self.storage.authorizationHeaderValue }

    /// Wraps a raw token.
    package init(_ value: String) {
        self.storage = Storage(value)
    }

    package static func == (lhs: BearerToken, rhs: BearerToken) -> Bool {
        lhs.storage === rhs.storage || lhs.value == rhs.value
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(self.value)
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
