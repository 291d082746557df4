import BearerdAuth
import BearerdTokens
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// The token store on disk: AES-256-GCM (``StoreFormat``), replaced atomically and durably on
/// every save (``AtomicFile``), one daemon at a time (``StoreLock``).
///
/// A wrong key is an error that leaves the file alone. A damaged or truncated file is moved aside
/// to `NAME.corrupt-TIMESTAMP`, never deleted, and the store reads as empty (not logged in).
public final class EncryptedTokenStore: TokenStore {
    public let path: String
    private let key: StoreKey
    private let profile: String
    private let lock: StoreLock
    /// The key in use and the salt it was derived with (scrypt runs once, not per save).
    private let derived = Mutex<(salt: [UInt8], key: [UInt8])?>(nil)

    /// Opens (and locks) the store at `path`; the file itself may not exist yet.
    public init(path: String, key: StoreKey, profile: String = "default") throws(StoreError) {
        self.path = path
        self.key = key
        self.profile = profile
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var info = stat()
        guard stat(directory, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw .io("the token store's directory \(directory) does not exist: create it (mode 0700)")
        }
        self.lock = try StoreLock.acquire(for: path)
        var material = try key.material()
        StoreCipher.wipe(&material)
    }

    public func load() throws -> StoredTokens? {
        var info = stat()
        guard stat(self.path, &info) == 0 else {
            guard errno == ENOENT else {
                throw StoreError.io("cannot read \(self.path): \(String(cString: strerror(errno)))")
            }
            return nil
        }
        if info.st_mode & 0o077 != 0 {
            throw StoreError.permissions(
                "the token store \(self.path) has mode 0\(String(info.st_mode & 0o777, radix: 8)), so other users may read it: run chmod 600 \(self.path)"
            )
        }
        guard let data = FileManager.default.contents(atPath: self.path) else {
            throw StoreError.io("cannot read \(self.path): check its owner and mode")
        }
        guard let (format, header, nonce, sealed) = StoreFormat.parse([UInt8](data)) else {
            throw self.corrupted(why: "not a bearerd token store, or cut short")
        }
        var key = try self.key(for: format)
        defer { StoreCipher.wipe(&key) }
        guard try StoreFormat.keyCheck(key) == format.keyCheck else { throw StoreError.wrongKey(self.path) }
        guard var plaintext = try StoreCipher.open(sealed, key: key, nonce: nonce, aad: header) else {
            throw self.corrupted(why: "its contents do not authenticate")
        }
        defer { StoreCipher.wipe(&plaintext) }
        // Checked once the header is known to be authentic.
        guard format.profile == self.profile else {
            throw StoreError.key(
                "the token store \(self.path) belongs to the profile \"\(format.profile)\", not \"\(self.profile)\""
            )
        }
        guard let payload = try? JSONDecoder().decode(Payload.self, from: Data(plaintext)) else {
            throw self.corrupted(why: "its contents are not readable")
        }
        return payload.tokens
    }

    public func save(_ tokens: StoredTokens) throws {
        var plaintext = Array(try JSONEncoder().encode(Payload(tokens)))
        defer { StoreCipher.wipe(&plaintext) }
        let (format, material) = try self.formatForWriting()
        var key = material
        defer { StoreCipher.wipe(&key) }
        let nonce = try StoreCipher.randomBytes(StoreCipher.nonceLength)
        let header = format.header
        let sealed = try StoreCipher.seal(plaintext, key: key, nonce: nonce, aad: header)
        try AtomicFile.write(header + nonce + sealed, to: self.path)
    }

    // MARK: Keys

    /// The key for a file written with `format`.
    private func key(for format: StoreFormat) throws(StoreError) -> [UInt8] {
        switch (self.key, format.kdf) {
        case (.keyFile, .key):
            return try self.key.material()
        case (.passphraseFile, .scrypt):
            if let cached = self.derived.withLock({ $0 }), cached.salt == format.salt { return cached.key }
            var passphrase = try self.key.material()
            defer { StoreCipher.wipe(&passphrase) }
            let key = try StoreCipher.scrypt(
                passphrase: passphrase,
                salt: format.salt,
                log2N: format.log2N,
                r: format.r,
                p: format.p
            )
            self.derived.withLock { $0 = (format.salt, key) }
            return key
        case (.keyFile, .scrypt), (.passphraseFile, .key):
            throw StoreError.wrongKey(self.path)
        }
    }

    /// The header and key for the next write: the key file as it is, or the passphrase through
    /// scrypt with the salt already in use (a fresh one for the first write).
    private func formatForWriting() throws(StoreError) -> (StoreFormat, [UInt8]) {
        switch self.key {
        case .keyFile:
            let key = try self.key.material()
            return (StoreFormat(kdf: .key, keyCheck: try StoreFormat.keyCheck(key), profile: self.profile), key)
        case .passphraseFile:
            let salt: [UInt8]
            if let cached = self.derived.withLock({ $0?.salt }) {
                salt = cached
            } else {
                salt = try StoreCipher.randomBytes(16)
            }
            var format = StoreFormat(
                kdf: .scrypt,
                log2N: StoreKey.log2N,
                r: StoreKey.r,
                p: StoreKey.p,
                salt: salt,
                keyCheck: [],
                profile: self.profile
            )
            let key = try self.key(for: format)
            format.keyCheck = try StoreFormat.keyCheck(key)
            return (format, key)
        }
    }

    // MARK: Damage

    /// Moves a damaged file aside (never deletes it) and says so.
    private func corrupted(why: String) -> StoreError {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        let aside = "\(self.path).corrupt-\(formatter.string(from: Date()))"
        let moved = rename(self.path, aside) == 0
        if moved { try? AtomicFile.syncDirectory(URL(fileURLWithPath: self.path).deletingLastPathComponent().path) }
        return .corrupted(self.path, why: why, movedTo: moved ? aside : nil)
    }

    /// What is encrypted: the tokens as JSON, the user's session and the client token apart.
    /// Files written before the two were apart hold the user's session at the top level.
    private struct Payload: Codable {
        var user: Session?
        var client: Session?

        init(_ tokens: StoredTokens) {
            self.user = tokens.user.map(Session.init)
            self.client = tokens.client.map(Session.init)
        }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.user = try container.decodeIfPresent(Session.self, forKey: .user)
            self.client = try container.decodeIfPresent(Session.self, forKey: .client)
            if self.user == nil, self.client == nil, let legacy = try? Session(from: decoder),
                legacy.refreshToken != nil || legacy.accessToken != nil
            {
                self.user = legacy
            }
        }

        var tokens: StoredTokens {
            StoredTokens(user: self.user?.stored, client: self.client?.stored)
        }
    }

    private struct Session: Codable {
        var refreshToken: String?
        var accessToken: String?
        var accessExpiresAt: Double?
        var scope: String?
        var receivedAt: Double?
        var refreshSentAt: Double?

        init(_ session: StoredSession) {
            self.refreshToken = session.refreshToken?.value
            self.accessToken = session.accessToken?.value
            self.accessExpiresAt = session.accessExpiresAt?.timeIntervalSince1970
            self.scope = session.scope
            self.receivedAt = session.receivedAt?.timeIntervalSince1970
            self.refreshSentAt = session.refreshSentAt?.timeIntervalSince1970
        }

        var stored: StoredSession {
            StoredSession(
                refreshToken: self.refreshToken.map(Secret.init),
                accessToken: self.accessToken.flatMap { BearerToken.isValidTokenValue($0) ? BearerToken($0) : nil },
                accessExpiresAt: self.accessExpiresAt.map(Date.init(timeIntervalSince1970:)),
                scope: self.scope,
                receivedAt: self.receivedAt.map(Date.init(timeIntervalSince1970:)),
                refreshSentAt: self.refreshSentAt.map(Date.init(timeIntervalSince1970:))
            )
        }
    }
}
