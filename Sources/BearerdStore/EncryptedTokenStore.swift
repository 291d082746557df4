import BearerdAuth
import BearerdFiles
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
    /// The store's directory, opened once and checked; every file is opened relative to it.
    private let directory: CheckedDirectory
    private let name: String
    /// The key in use and the salt it was derived with (scrypt runs once, not per save).
    private let derived = Mutex<(salt: [UInt8], key: [UInt8])?>(nil)

    /// Opens (and locks) the store at `path`; the file itself may not exist yet.
    public init(path: String, key: StoreKey, profile: String = "default") throws(StoreError) {
        self.path = path
        self.key = key
        self.profile = profile
        do throws(FileCheckError) {
            (self.directory, self.name) = try CheckedDirectory.parent(of: path)
        } catch .system(_, let directory, ENOENT), .system(_, let directory, ENOTDIR) {
            throw .io("the token store's directory \(directory) does not exist: create it (mode 0700)")
        } catch {
            throw .io("the token store's directory: \(error)")
        }
        self.lock = try StoreLock.acquire(for: path, in: self.directory, name: self.name)
        var material = try key.material()
        StoreCipher.wipe(&material)
    }

    /// The largest store file bearerd reads: a few tokens and their metadata, sealed.
    static let maxFileSize = 1 << 20

    public func load() throws -> StoredTokens? {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try self.directory.read(self.name, limit: Self.maxFileSize)
        } catch .tooLarge {
            throw self.corrupted(why: "larger than \(Self.maxFileSize) bytes")
        } catch {
            throw StoreError.permissions("the token store: \(error)")
        }
        guard let (bytes, mode) = contents else { return nil }
        if mode & 0o077 != 0 {
            throw StoreError.permissions(
                "the token store \(self.path) has mode 0\(String(mode & 0o777, radix: 8)), so other users may read it: run chmod 600 \(self.path)"
            )
        }
        do {
            return try StoreFile.read(bytes, profile: self.profile) { format throws(StoreError) in
                try self.key(for: format)
            }
        } catch .damaged(let why) {
            throw self.corrupted(why: why)
        } catch .wrongKey {
            throw StoreError.wrongKey(self.path)
        } catch .otherProfile(let profile) {
            throw StoreError.key(
                "the token store \(self.path) belongs to the profile \"\(profile)\", not \"\(self.profile)\""
            )
        } catch .store(let error) {
            throw error
        }
    }

    public func save(_ tokens: StoredTokens) throws {
        var plaintext = try StorePayload.encode(tokens)
        defer { StoreCipher.wipe(&plaintext) }
        let (format, material) = try self.formatForWriting()
        var key = material
        defer { StoreCipher.wipe(&key) }
        let nonce = try StoreCipher.randomBytes(StoreCipher.nonceLength)
        let header = format.header
        let sealed = try StoreCipher.seal(plaintext, key: key, nonce: nonce, aad: header)
        try AtomicFile.write(header + nonce + sealed, to: self.name, in: self.directory)
    }

    // MARK: Keys

    /// The key for a file written with `format`.
    private func key(for format: StoreFormat) throws(StoreError) -> [UInt8] {
        guard case .scrypt = format.kdf else { return try self.key.key(for: format, storePath: self.path) }
        // scrypt runs once per salt, not per save.
        if let cached = self.derived.withLock({ $0 }), cached.salt == format.salt { return cached.key }
        let key = try self.key.key(for: format, storePath: self.path)
        self.derived.withLock { $0 = (format.salt, key) }
        return key
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
        let aside = "\(self.name).corrupt-\(formatter.string(from: Date()))"
        let moved = (try? self.directory.rename(self.name, to: aside)) != nil
        if moved { try? self.directory.sync() }
        return .corrupted(self.path, why: why, movedTo: moved ? self.directory.pathOf(aside) : nil)
    }
}
