/// A login or logout that did not happen. Its message says why and what to do next; it never
/// holds a token, a password or a code.
package struct LoginError: Error, Sendable, Equatable, CustomStringConvertible {
    package let message: String

    package init(_ message: String) {
        self.message = message
    }

    package var description: String { self.message }
}
