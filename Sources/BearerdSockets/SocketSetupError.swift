/// Why a socket cannot be put in place or listened on: the config key at fault and what to do.
public struct SocketSetupError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { self.message }
}
