/// A login or logout that did not happen. Its message says why and what to do next; it never
/// holds a token, a password or a code.
public struct LoginError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { self.message }
}
