/// A refresh token, client secret or password: its `description` is redacted, so it cannot reach
/// a log line, an error message or `status` output by interpolation.
public struct Secret: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The raw value. Read it only to put it on the wire or into the store.
    public let value: String

    public init(_ value: String) {
        self.value = value
    }

    public var description: String { "Secret(redacted, \(self.value.utf8.count) bytes)" }
    public var debugDescription: String { self.description }
}
