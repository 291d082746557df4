import CBearerdCrypto

/// AES-256-GCM, random bytes and scrypt from the system's libcrypto.
enum StoreCipher {
    static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    static func randomBytes(_ count: Int) throws(StoreError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw .crypto("RAND_bytes failed") }
        return bytes
    }

    /// Encrypts `plaintext`; returns the ciphertext followed by the 16-byte tag.
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) throws(StoreError) -> [UInt8] {
        precondition(key.count == Self.keyLength && nonce.count == Self.nonceLength)
        guard let context = EVP_CIPHER_CTX_new() else { throw .crypto("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: plaintext.count + Self.tagLength)
        var length: Int32 = 0
        guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceLength), nil) == 1,
            EVP_EncryptInit_ex(context, nil, nil, key, nonce) == 1,
            EVP_EncryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1,
            EVP_EncryptUpdate(context, &output, &length, plaintext, Int32(plaintext.count)) == 1
        else { throw .crypto("AES-256-GCM encryption failed") }
        var written = Int(length)
        let finished = output.withUnsafeMutableBufferPointer { buffer in
            EVP_EncryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard finished == 1 else { throw .crypto("AES-256-GCM encryption failed") }
        written += Int(length)
        let tagged = output.withUnsafeMutableBufferPointer { buffer in
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), buffer.baseAddress! + written)
        }
        guard tagged == 1 else { throw .crypto("AES-256-GCM tag failed") }
        return Array(output[..<(written + Self.tagLength)])
    }

    /// Decrypts ciphertext-and-tag; `nil` when the tag does not verify (wrong key, or any byte of
    /// the ciphertext, tag or additional data changed).
    static func open(_ sealed: [UInt8], key: [UInt8], nonce: [UInt8], aad: [UInt8]) throws(StoreError) -> [UInt8]? {
        precondition(key.count == Self.keyLength && nonce.count == Self.nonceLength)
        guard sealed.count >= Self.tagLength else { return nil }
        let ciphertext = Array(sealed[..<(sealed.count - Self.tagLength)])
        var tag = Array(sealed[(sealed.count - Self.tagLength)...])
        guard let context = EVP_CIPHER_CTX_new() else { throw .crypto("EVP_CIPHER_CTX_new failed") }
        defer { EVP_CIPHER_CTX_free(context) }
        var output = [UInt8](repeating: 0, count: ciphertext.count + Self.tagLength)
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceLength), nil) == 1,
            EVP_DecryptInit_ex(context, nil, nil, key, nonce) == 1,
            EVP_DecryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1,
            EVP_DecryptUpdate(context, &output, &length, ciphertext, Int32(ciphertext.count)) == 1,
            EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), &tag) == 1
        else { throw .crypto("AES-256-GCM decryption failed") }
        let written = Int(length)
        let verified = output.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + written, &length)
        }
        guard verified == 1 else {
            output.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
            return nil
        }
        return Array(output[..<(written + Int(length))])
    }

    /// scrypt (RFC 7914) into a 32-byte key.
    static func scrypt(
        passphrase: [UInt8],
        salt: [UInt8],
        log2N: UInt8,
        r: UInt32,
        p: UInt32
    ) throws(StoreError)
        -> [UInt8]
    {
        var key = [UInt8](repeating: 0, count: Self.keyLength)
        let n = UInt64(1) << UInt64(log2N)
        // 128 * r * N bytes of working memory, and some room.
        let maxMemory = 256 * UInt64(r) * n + (1 << 20)
        let status = passphrase.withUnsafeBytes { pass in
            EVP_PBE_scrypt(
                pass.baseAddress?.assumingMemoryBound(to: CChar.self),
                pass.count,
                salt,
                salt.count,
                n,
                UInt64(r),
                UInt64(p),
                maxMemory,
                &key,
                key.count
            )
        }
        guard status == 1 else { throw .crypto("scrypt failed") }
        return key
    }

    /// SHA-256 of `bytes`.
    static func sha256(_ bytes: [UInt8]) throws(StoreError) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_Digest(bytes, bytes.count, &digest, &length, EVP_sha256(), nil) == 1 else {
            throw .crypto("SHA-256 failed")
        }
        return digest
    }

    static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { OPENSSL_cleanse($0.baseAddress, $0.count) }
    }
}
