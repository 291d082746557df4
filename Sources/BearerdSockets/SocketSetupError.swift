/// Why a socket cannot be put in place or listened on: the config key at fault and what to do.
package struct SocketSetupError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { self.message }
}
