/// The token store cannot be used; the message says what to do. Never holds a key or a token.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        case wrongKey
        case corrupted
        case permissions
        case inUse
        case io
        case key
        case crypto
    }

    public let code: Code
    public let description: String

    static func wrongKey(_ path: String) -> Self {
        Self(
            code: .wrongKey,
            description:
                "the key does not match the token store \(path): use the key it was written with, or move the store away and log in again"
        )
    }

    static func corrupted(_ path: String, why: String, movedTo: String?) -> Self {
        let moved = movedTo.map { "; it was moved aside to \($0)" } ?? ""
        return Self(code: .corrupted, description: "the token store \(path) is damaged (\(why))\(moved): log in again")
    }

    static func permissions(_ message: String) -> Self { Self(code: .permissions, description: message) }
    static func inUse(_ message: String) -> Self { Self(code: .inUse, description: message) }
    static func io(_ message: String) -> Self { Self(code: .io, description: message) }
    static func key(_ message: String) -> Self { Self(code: .key, description: message) }
    static func crypto(_ message: String) -> Self { Self(code: .crypto, description: "libcrypto: \(message)") }
}
