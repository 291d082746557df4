import BearerdTokens
import Synchronization

/// Seals tokens into the store format (``StoreFormat``) and opens them again, with the store key:
/// the file store and the fleet's row hold the same bytes, so PostgreSQL and its backups never see
/// a token. scrypt (a passphrase) runs once per salt, not per write.
package final class StoreSealer: Sendable {
    private let key: StoreKey
    private let profile: String
    /// Where the sealed bytes live, for messages: a path, or the fleet's table and row.
    private let place: String
    /// The key in use and the salt it was derived with.
    private let derived = Mutex<(salt: [UInt8], key: [UInt8])?>(nil)

    /// Checks that the key can be read now.
    package init(key: StoreKey, profile: String, place: String) throws(StoreError) {
        self.key = key
        self.profile = profile
        self.place = place
        var material = try key.material()
        StoreCipher.wipe(&material)
    }

    /// The sealed bytes for `tokens`: header, nonce, ciphertext and tag.
    package func seal(_ tokens: StoredTokens) throws -> [UInt8] {
        var plaintext = try StorePayload.encode(tokens)
        defer { StoreCipher.wipe(&plaintext) }
        let (format, material) = try self.formatForWriting()
        var key = material
        defer { StoreCipher.wipe(&key) }
        let nonce = try StoreCipher.randomBytes(StoreCipher.nonceLength)
        let header = format.header
        return header + nonce + (try StoreCipher.seal(plaintext, key: key, nonce: nonce, aad: header))
    }

    /// The tokens sealed in `bytes`, or why there are none.
    package func open(_ bytes: [UInt8]) throws(StoreError) -> StoredTokens {
        try StoreFile.read(bytes, profile: self.profile) { format throws(StoreError) in
            try self.key(for: format)
        }
    }

    /// The error for bytes sealed with another key.
    package var wrongKey: StoreError { .wrongKey(self.place) }

    /// The key for bytes written with `format`.
    private func key(for format: StoreFormat) throws(StoreError) -> [UInt8] {
        guard case .scrypt = format.kdf else { return try self.key.key(for: format, storePath: self.place) }
        if let cached = self.derived.withLock({ $0 }), cached.salt == format.salt { return cached.key }
        let key = try self.key.key(for: format, storePath: self.place)
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
}
