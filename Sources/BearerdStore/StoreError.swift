/// The token store cannot be used; the message says what to do. Never holds a key or a token.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    /// Which failure it is, for code to compare (`error.code == .inUse`). A struct over a
    /// private enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case wrongKey, otherProfile, corrupted, permissions, inUse, io, key, crypto
        }

        private let kind: Kind

        /// The key does not open the store.
        package static let wrongKey = Code(kind: .wrongKey)
        /// The tokens were sealed for another `store.profile`.
        package static let otherProfile = Code(kind: .otherProfile)
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
            case .otherProfile: "other_profile"
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
    /// What is wrong with the bytes (``Code/corrupted``), or the profile they were sealed for
    /// (``Code/otherProfile``): for a caller that words the error with its own place (a file, the
    /// fleet's row). Never holds a token or key.
    package let detail: String?

    init(code: Code, description: String, path: String? = nil, holderPID: Int? = nil, detail: String? = nil) {
        self.code = code
        self.description = description
        self.path = path
        self.holderPID = holderPID
        self.detail = detail
    }

    /// The key does not open the store at `path` (`nil`: sealed bytes from a place not known here).
    static func wrongKey(_ path: String?) -> Self {
        Self(
            code: .wrongKey,
            description:
                "the key does not match the token store\(path.map { " \($0)" } ?? ""): use the key it was written with, or move the store away and log in again",
            path: path
        )
    }

    /// Sealed bytes that are not a store, are cut short, changed, or unreadable once decrypted.
    static func damaged(_ why: String) -> Self {
        Self(code: .corrupted, description: "the sealed tokens are damaged (\(why))", detail: why)
    }

    /// Sealed bytes that belong to the profile `profile`.
    static func otherProfile(_ profile: String) -> Self {
        Self(
            code: .otherProfile,
            description: "the sealed tokens belong to the profile \"\(profile)\"",
            detail: profile
        )
    }

    /// The store file at `path` holds tokens sealed for the profile `found`, not `configured`.
    static func otherProfile(_ path: String, found: String, configured: String) -> Self {
        Self(
            code: .otherProfile,
            description:
                "store.profile: the token store \(path) belongs to the profile \"\(found)\", not \"\(configured)\": set store.profile to it, or store.path to another file",
            path: path,
            detail: found
        )
    }

    static func corrupted(_ path: String, why: String, movedTo: String?) -> Self {
        let moved = movedTo.map { "; it was moved aside to \($0)" } ?? ""
        return Self(
            code: .corrupted,
            description: "the token store \(path) is damaged (\(why))\(moved): log in again",
            path: path,
            detail: why
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
