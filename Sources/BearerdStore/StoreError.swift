/// The token store cannot be used; the message says what to do. Never holds a key or a token.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Which failure it is, for code to compare (`error.code == .inUse`). A struct over a
    /// private enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case wrongKey, corrupted, permissions, inUse, io, key, crypto
        }

        private let kind: Kind

        /// The key does not open the store.
        package static let wrongKey = Code(kind: .wrongKey)
        /// The store file is damaged.
        package static let corrupted = Code(kind: .corrupted)
        /// A file's owner or mode is not safe.
        package static let permissions = Code(kind: .permissions)
        /// Another bearerd holds the store's lock.
        package static let inUse = Code(kind: .inUse)
        /// A read or write failed.
        package static let io = Code(kind: .io)
        /// The key file or passphrase cannot be used.
        package static let key = Code(kind: .key)
        /// libcrypto failed.
        package static let crypto = Code(kind: .crypto)

        package var description: String {
            switch self.kind {
            case .wrongKey: "wrong_key"
            case .corrupted: "corrupted"
            case .permissions: "permissions"
            case .inUse: "in_use"
            case .io: "io"
            case .key: "key"
            case .crypto: "crypto"
            }
        }
    }

    package let code: Code
    package let description: String
    /// The store file the error is about, when the error is about one.
    package let path: String?
    /// The process holding the store's lock (``Code/inUse``), when its lock file names one.
    package let holderPID: Int?

    init(code: Code, description: String, path: String? = nil, holderPID: Int? = nil) {
        self.code = code
        self.description = description
        self.path = path
        self.holderPID = holderPID
    }

    static func wrongKey(_ path: String) -> Self {
        Self(
            code: .wrongKey,
            description:
                "the key does not match the token store \(path): use the key it was written with, or move the store away and log in again",
            path: path
        )
    }

    static func corrupted(_ path: String, why: String, movedTo: String?) -> Self {
        let moved = movedTo.map { "; it was moved aside to \($0)" } ?? ""
        return Self(
            code: .corrupted,
            description: "the token store \(path) is damaged (\(why))\(moved): log in again",
            path: path
        )
    }

    /// Another bearerd holds the lock of the store at `path`.
    static func inUse(_ path: String, holderPID: Int?) -> Self {
        Self(
            code: .inUse,
            description:
                "\(Self.heldBy(path, holderPID)): stop it first; `bearerd login`, `status` and `token` go through the running daemon",
            path: path,
            holderPID: holderPID
        )
    }

    /// "the token store PATH is in use by another bearerd (pid N)": what an ``Code/inUse`` error
    /// is about, for a caller that explains it in its own words.
    package var holder: String? {
        guard self.code == .inUse, let path = self.path else { return nil }
        return Self.heldBy(path, self.holderPID)
    }

    private static func heldBy(_ path: String, _ pid: Int?) -> String {
        "the token store \(path) is in use by another bearerd\(pid.map { " (pid \($0))" } ?? "")"
    }

    static func permissions(_ message: String) -> Self { Self(code: .permissions, description: message) }
    static func io(_ message: String) -> Self { Self(code: .io, description: message) }
    static func key(_ message: String) -> Self { Self(code: .key, description: message) }
    static func crypto(_ message: String) -> Self { Self(code: .crypto, description: "libcrypto: \(message)") }
}
