import BearerdFiles
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where the store's key comes from.
package enum StoreKey: Sendable {
    /// 32 random bytes (`store.key_file`; a systemd credential is such a file in
    /// `$CREDENTIALS_DIRECTORY`). `bearerd keygen` writes one.
    case keyFile(String)
    /// A passphrase (`store.passphrase_file`), stretched by scrypt with the salt in the header.
    case passphraseFile(String)

    /// scrypt's cost: N = 2^15, r = 8, p = 1 (32 MiB, about 0.1 s).
    static let log2N: UInt8 = 15
    static let r: UInt32 = 8
    static let p: UInt32 = 1

    /// Reads the key material, refusing a file others may read.
    func material() throws(StoreError) -> [UInt8] {
        let path: String
        switch self {
        case .keyFile(let file), .passphraseFile(let file): path = file
        }
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: 4096)
        } catch {
            throw .key("cannot read the store key: \(error)")
        }
        guard let (read, mode) = contents else {
            throw .key("cannot find the store key \(path): create it with `bearerd keygen --out \(path)`")
        }
        var bytes = read
        if mode & 0o077 != 0 {
            StoreCipher.wipe(&bytes)
            throw .permissions(
                "the store key \(path) has mode 0\(String(mode & 0o777, radix: 8)), so other users may read it: run chmod 400 \(path)"
            )
        }
        switch self {
        case .keyFile:
            guard bytes.count == StoreCipher.keyLength else {
                StoreCipher.wipe(&bytes)
                throw .key(
                    "the store key \(path) must hold exactly 32 bytes: create one with `bearerd keygen --out \(path)`"
                )
            }
        case .passphraseFile:
            while let last = bytes.last, last == 0x0A || last == 0x0D { bytes.removeLast() }
            guard bytes.count >= 12 else {
                StoreCipher.wipe(&bytes)
                throw .key("the store passphrase in \(path) is shorter than 12 characters")
            }
        }
        return bytes
    }

    /// The key for a store file written with `format`: the key file as it is, or the passphrase
    /// through scrypt with the header's salt and cost. A key of the other kind is the wrong key
    /// for the store at `storePath`.
    func key(for format: StoreFormat, storePath: String) throws(StoreError) -> [UInt8] {
        switch (self, format.kdf) {
        case (.keyFile, .key):
            return try self.material()
        case (.passphraseFile, .scrypt):
            var passphrase = try self.material()
            defer { StoreCipher.wipe(&passphrase) }
            return try StoreCipher.scrypt(
                passphrase: passphrase,
                salt: format.salt,
                log2N: format.log2N,
                r: format.r,
                p: format.p
            )
        case (.keyFile, .scrypt), (.passphraseFile, .key):
            throw StoreError.wrongKey(storePath)
        }
    }

    /// Writes a new random key to `path` with mode 0400; refuses to replace an existing file.
    package static func generate(to path: String) throws(StoreError) {
        var key = try StoreCipher.randomBytes(StoreCipher.keyLength)
        defer { StoreCipher.wipe(&key) }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o400)
        guard descriptor >= 0 else {
            throw .io("cannot create \(path): \(String(cString: strerror(errno))) (an existing key is never replaced)")
        }
        defer { close(descriptor) }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == key.count, fsync(descriptor) == 0 else {
            throw .io("cannot write \(path): \(String(cString: strerror(errno)))")
        }
    }
}
