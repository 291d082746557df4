/// The store file (all integers big-endian):
///
///     magic "BRDSTORE" | version 1 | kdf (0 key, 1 scrypt) | log2 N | r (4) | p (4) | salt (16)
///     | key check (16) | profile length (2) | profile | nonce (12) | ciphertext | tag (16)
///
/// Everything before the nonce is the header, authenticated as GCM's additional data, so a
/// changed byte anywhere is caught. The key check (SHA-256 of a label and the key, cut to 16
/// bytes) tells a wrong key from a damaged file, so a wrong key never moves a good store aside.
package struct StoreFormat: Equatable, Sendable {
    enum KDF: UInt8, Sendable {
        case key = 0
        case scrypt = 1
    }

    static let magic: [UInt8] = Array("BRDSTORE".utf8)
    static let version: UInt8 = 1

    var kdf: KDF
    var log2N: UInt8 = 0
    var r: UInt32 = 0
    var p: UInt32 = 0
    var salt = [UInt8](repeating: 0, count: 16)
    var keyCheck: [UInt8]
    var profile: String

    var header: [UInt8] {
        var bytes = Self.magic
        bytes.append(Self.version)
        bytes.append(self.kdf.rawValue)
        bytes.append(self.log2N)
        bytes += Self.bigEndian(self.r) + Self.bigEndian(self.p)
        bytes += self.salt + self.keyCheck
        let profile = Array(self.profile.utf8)
        bytes += [UInt8(profile.count >> 8), UInt8(profile.count & 0xFF)] + profile
        return bytes
    }

    /// Splits a file into its header and the sealed part (nonce, ciphertext, tag).
    static func parse(_ file: [UInt8]) -> (format: StoreFormat, header: [UInt8], nonce: [UInt8], sealed: [UInt8])? {
        let fixed = Self.magic.count + 3 + 8 + 16 + 16 + 2
        guard file.count >= fixed, Array(file[0..<8]) == Self.magic, file[8] == Self.version,
            let kdf = KDF(rawValue: file[9])
        else { return nil }
        let profileLength = Int(file[fixed - 2]) << 8 | Int(file[fixed - 1])
        let headerLength = fixed + profileLength
        guard file.count >= headerLength + StoreCipher.nonceLength + StoreCipher.tagLength,
            let profile = String(validating: file[fixed..<headerLength], as: UTF8.self)
        else { return nil }
        let format = StoreFormat(
            kdf: kdf,
            log2N: file[10],
            r: Self.uint32(file, at: 11),
            p: Self.uint32(file, at: 15),
            salt: Array(file[19..<35]),
            keyCheck: Array(file[35..<51]),
            profile: profile
        )
        // The header is authenticated only with the key these parameters derive: bound them before
        // scrypt runs, or a damaged file could ask for petabytes (or overflow the memory sum).
        if kdf == .scrypt, !Self.scryptParametersAreSane(log2N: format.log2N, r: format.r, p: format.p) { return nil }
        let nonceEnd = headerLength + StoreCipher.nonceLength
        return (format, Array(file[..<headerLength]), Array(file[headerLength..<nonceEnd]), Array(file[nonceEnd...]))
    }

    /// scrypt parameters bearerd writes (N = 2^15, r = 8, p = 1) and a margin for later ones:
    /// N from 2^10 to 2^20, r up to 32, p up to 16, at most 1 GiB of working memory.
    static func scryptParametersAreSane(log2N: UInt8, r: UInt32, p: UInt32) -> Bool {
        guard (10...20).contains(log2N), (1...32).contains(r), (1...16).contains(p) else { return false }
        return 128 * UInt64(r) << UInt64(log2N) <= 1 << 30
    }

    static func keyCheck(_ key: [UInt8]) throws(StoreError) -> [UInt8] {
        Array(try StoreCipher.sha256(Array("bearerd store key check v1".utf8) + key).prefix(16))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func uint32(_ bytes: [UInt8], at index: Int) -> UInt32 {
        bytes[index..<(index + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
