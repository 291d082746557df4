import BearerdTokens

/// Reads a store file's bytes into tokens, apart from the file system and where the key comes
/// from, so that the fuzzers can feed it any bytes: every way a file can be wrong is an error
/// here, never a trap.
package enum StoreFile {
    /// The tokens in `file`, sealed for `profile` with the key `key` gives for its header.
    ///
    /// Throws ``StoreError`` with the code ``StoreError/Code/corrupted`` (not a store, cut short,
    /// changed, or unreadable once decrypted; ``StoreError/detail`` says which),
    /// ``StoreError/Code/wrongKey`` (the key check says another key sealed it; the file is fine),
    /// ``StoreError/Code/otherProfile`` (sealed for another `store.profile`, named in `detail`), or
    /// whatever `key` threw (the key could not be had, or libcrypto failed).
    package static func read(
        _ file: [UInt8],
        profile: String,
        key: (StoreFormat) throws(StoreError) -> [UInt8]
    ) throws(StoreError) -> StoredTokens {
        guard let (format, header, nonce, sealed) = StoreFormat.parse(file) else {
            throw .damaged("not a bearerd token store, or cut short")
        }
        var material: [UInt8] = []
        defer { StoreCipher.wipe(&material) }
        let check: [UInt8]
        let opened: [UInt8]?
        material = try key(format)
        check = try StoreFormat.keyCheck(material)
        opened = check == format.keyCheck ? try StoreCipher.open(sealed, key: material, nonce: nonce, aad: header) : nil
        guard check == format.keyCheck else { throw .wrongKey(nil) }
        guard var plaintext = opened else { throw .damaged("its contents do not authenticate") }
        defer { StoreCipher.wipe(&plaintext) }
        // Checked once the header is known to be authentic.
        guard format.profile == profile else { throw .otherProfile(format.profile) }
        guard let tokens = StorePayload.decode(plaintext) else { throw .damaged("its contents are not readable") }
        return tokens
    }

    /// The tokens in a decrypted payload, or `nil` when it is not one.
    package static func decodePayload(_ plaintext: [UInt8]) -> StoredTokens? {
        StorePayload.decode(plaintext)
    }

    /// A decrypted payload for `tokens`.
    package static func encodePayload(_ tokens: StoredTokens) throws -> [UInt8] {
        try StorePayload.encode(tokens)
    }
}
