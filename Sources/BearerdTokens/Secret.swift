/// A refresh token, client secret or password: its `description` is redacted, so it cannot reach
/// a log line, an error message or `status` output by interpolation.
package struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The raw value. Read it only to put it on the wire or into the store.
    package let value: String

    package init(_ value: String) {
        self.value = value
    }

    package var description: String { "Secret(redacted, \(self.value.utf8.count) bytes)" }
    package var debugDescription: String { self.description }
}
