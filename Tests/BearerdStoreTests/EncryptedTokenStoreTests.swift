import BearerdAuth
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@testable import BearerdStore

#if canImport(Glibc)
import Glibc
#endif

@Suite("Encrypted token store")
struct EncryptedTokenStoreTests {
    let directory: TemporaryDirectory
    let keyFile: String
    let storePath: String
    let tokens = StoredTokens(
        user: StoredSession(
            refreshToken: Secret("refresh-secret-0123"),
            accessToken: BearerToken("access-secret-4567"),
            accessExpiresAt: Date(timeIntervalSince1970: 1_800_000_600),
            scope: "read write",
            receivedAt: Date(timeIntervalSince1970: 1_800_000_000),
            refreshSentAt: Date(timeIntervalSince1970: 1_800_000_500)
        ),
        client: StoredSession(
            accessToken: BearerToken("client-access-secret-89"),
            accessExpiresAt: Date(timeIntervalSince1970: 1_800_003_600)
        )
    )

    init() throws {
        self.directory = try TemporaryDirectory()
        self.keyFile = self.directory.path + "/store.key"
        try StoreKey.generate(to: self.keyFile)
        self.storePath = self.directory.path + "/tokens.store"
    }

    func store(key: StoreKey? = nil) throws -> EncryptedTokenStore {
        try EncryptedTokenStore(path: self.storePath, key: key ?? .keyFile(self.keyFile))
    }

    func bytes() throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: self.storePath))) }

    func files() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: self.directory.path).sorted()
    }

    @Test func aSavedStoreReadsBackInANewProcessLifetime() throws {
        #expect(try self.store().load() == nil, "no file: not logged in")
        try self.store().save(self.tokens)
        #expect(try self.store().load() == self.tokens)
        var info = stat()
        #expect(stat(self.storePath, &info) == 0 && info.st_mode & 0o777 == 0o600)
        #expect(try self.files() == ["store.key", "tokens.store", "tokens.store.lock"], "no temp file is left")
        let text = String(decoding: try self.bytes(), as: UTF8.self)
        #expect(!text.contains("refresh-secret") && !text.contains("access-secret"), "tokens are encrypted at rest")
        #expect(!text.contains("read write") && !text.contains("client"), "so is everything else")
    }

    @Test func aFileFromBeforeUserAndClientWereApartReadsAsTheUsersSession() throws {
        let key = [UInt8](try Data(contentsOf: URL(fileURLWithPath: self.keyFile)))
        let header = StoreFormat(kdf: .key, keyCheck: try StoreFormat.keyCheck(key), profile: "default").header
        let nonce = try StoreCipher.randomBytes(StoreCipher.nonceLength)
        let old = #"{"refreshToken":"old-refresh","accessToken":"old-access","accessExpiresAt":1800000600}"#
        let sealed = try StoreCipher.seal(Array(old.utf8), key: key, nonce: nonce, aad: header)
        try Data(header + nonce + sealed).write(to: URL(fileURLWithPath: self.storePath))
        chmod(self.storePath, 0o600)
        let expected = StoredTokens(
            refreshToken: Secret("old-refresh"),
            accessToken: BearerToken("old-access"),
            accessExpiresAt: Date(timeIntervalSince1970: 1_800_000_600)
        )
        #expect(try self.store().load() == expected)
    }

    @Test func aStoreOfAnotherProfileIsNamedAndLeftAlone() throws {
        try EncryptedTokenStore(path: self.storePath, key: .keyFile(self.keyFile), profile: "staging").save(self.tokens)
        let written = try self.bytes()
        #expect {
            _ = try self.store().load()
        } throws: { error in
            guard let error = error as? StoreError else { return false }
            return error.code == .otherProfile && error.detail == "staging" && error.path == self.storePath
                && "\(error)".hasPrefix("store.profile: ") && "\(error)".contains("\"staging\", not \"default\"")
        }
        #expect(try self.bytes() == written, "the file is neither moved nor changed")
        #expect(try self.files() == ["store.key", "tokens.store", "tokens.store.lock"])
    }

    @Test func everyWriteUsesAFreshNonce() throws {
        let store = try self.store()
        try store.save(self.tokens)
        let first = try self.bytes()
        try store.save(self.tokens)
        #expect(first != (try self.bytes()))
    }

    @Test func aFlippedByteAnywhereIsRejectedAndTheFileKeptAside() throws {
        try self.store().save(self.tokens)
        let original = try self.bytes()
        let store = try self.store()
        for index in original.indices {
            var damaged = original
            damaged[index] ^= 0x01
            try Data(damaged).write(to: URL(fileURLWithPath: self.storePath))
            chmod(self.storePath, 0o600)
            do {
                _ = try store.load()
                Issue.record("byte \(index) flipped and the store still loaded")
            } catch let error as StoreError {
                // The key check tells a wrong key, which leaves the file alone; anything else is
                // damage (byte 9 turned to scrypt comes with no scrypt parameters).
                let expected: StoreError.Code = (35..<51).contains(index) ? .wrongKey : .corrupted
                #expect(error.code == expected, "byte \(index): \(error)")
            }
            for file in try self.files() where file.contains(".corrupt-") {
                #expect(try Data(contentsOf: URL(fileURLWithPath: self.directory.path + "/" + file)) == Data(damaged))
                try FileManager.default.removeItem(atPath: self.directory.path + "/" + file)
            }
        }
    }

    @Test(arguments: [0, 7, 40, 70, 90])
    func aTruncatedFileIsMovedAsideNeverDeleted(keep: Int) throws {
        try self.store().save(self.tokens)
        let cut = Array(try self.bytes().prefix(keep))
        try Data(cut).write(to: URL(fileURLWithPath: self.storePath))
        #expect {
            _ = try self.store().load()
        } throws: { error in
            (error as? StoreError)?.code == .corrupted && "\(error)".contains("log in again")
        }
        let aside = try #require(try self.files().first { $0.hasPrefix("tokens.store.corrupt-") })
        #expect(try Data(contentsOf: URL(fileURLWithPath: self.directory.path + "/" + aside)) == Data(cut))
        #expect(try self.store().load() == nil)
    }

    @Test func aWrongKeyIsAClearErrorAndLeavesTheFileAlone() throws {
        try self.store().save(self.tokens)
        let before = try self.bytes()
        let otherKey = self.directory.path + "/other.key"
        try StoreKey.generate(to: otherKey)
        #expect {
            _ = try self.store(key: .keyFile(otherKey)).load()
        } throws: { error in
            (error as? StoreError)?.code == .wrongKey && "\(error)".contains("does not match")
        }
        #expect(try self.bytes() == before)
        #expect(try self.store().load() == self.tokens)
    }

    @Test func aPassphraseWorksThroughScrypt() throws {
        let passphrase = try self.directory.write("correct horse battery staple\n", to: "passphrase")
        do {
            let store = try self.store(key: .passphraseFile(passphrase))
            try store.save(self.tokens)
            try store.save(self.tokens)
        }
        #expect(try self.store(key: .passphraseFile(passphrase)).load() == self.tokens)
        let wrong = try self.directory.write("incorrect horse battery staple", to: "wrong")
        #expect(throws: StoreError.self) { _ = try self.store(key: .passphraseFile(wrong)).load() }
        #expect(throws: StoreError.self) { _ = try self.store().load() }
    }

    /// The header names scrypt's cost, and it is authenticated only by the key that cost derives:
    /// a damaged header must not make bearerd trap (an overflowing memory sum) or run scrypt with
    /// a cost of hours and terabytes before it can tell.
    @Test(arguments: [(UInt8(63), UInt32.max, UInt32(1)), (40, 8, 1), (15, 8, 0xFFFF), (15, 0, 1), (9, 8, 1)])
    func scryptParametersOutOfRangeAreDamage(log2N: UInt8, r: UInt32, p: UInt32) throws {
        let passphrase = try self.directory.write("correct horse battery staple\n", to: "passphrase")
        try self.store(key: .passphraseFile(passphrase)).save(self.tokens)
        var file = try self.bytes()
        file[10] = log2N
        for (index, value) in [(11, r), (15, p)] {
            for byte in 0..<4 { file[index + byte] = UInt8(truncatingIfNeeded: value >> (24 - 8 * UInt32(byte))) }
        }
        try Data(file).write(to: URL(fileURLWithPath: self.storePath))
        #expect {
            _ = try self.store(key: .passphraseFile(passphrase)).load()
        } throws: { error in
            (error as? StoreError)?.code == .corrupted
        }
        #expect(StoreFormat.scryptParametersAreSane(log2N: StoreKey.log2N, r: StoreKey.r, p: StoreKey.p))
    }

    @Test func keysAndStoresOthersMayReadAreRefused() throws {
        chmod(self.keyFile, 0o440)
        #expect {
            _ = try self.store()
        } throws: { error in
            (error as? StoreError)?.code == .permissions && "\(error)".contains("chmod 400")
        }
        chmod(self.keyFile, 0o400)
        try self.store().save(self.tokens)
        chmod(self.storePath, 0o644)
        #expect {
            _ = try self.store().load()
        } throws: { error in
            (error as? StoreError)?.code == .permissions
        }
    }

    @Test func aSecondDaemonOnTheSameStoreIsRefusedNamingTheHolder() throws {
        do {
            let first = try self.store()
            #expect {
                _ = try self.store()
            } throws: { error in
                guard let error = error as? StoreError else { return false }
                // The holder is a field, for callers that explain it in their own words.
                return error.code == .inUse && "\(error)".contains("pid \(getpid())")
                    && error.holderPID == Int(getpid()) && error.path == self.storePath
                    && error.holder
                        == "the token store \(self.storePath) is in use by another bearerd (pid \(getpid()))"
            }
            withExtendedLifetime(first) {}
        }
        // Released with its holder.
        #expect(throws: Never.self) { _ = try self.store() }
    }

    @Test func keygenWritesThirtyTwoBytesOwnerReadOnlyAndNeverReplacesAKey() throws {
        var info = stat()
        #expect(stat(self.keyFile, &info) == 0 && info.st_mode & 0o777 == 0o400)
        #expect(try Data(contentsOf: URL(fileURLWithPath: self.keyFile)).count == 32)
        #expect(throws: StoreError.self) { try StoreKey.generate(to: self.keyFile) }
    }
}

@Suite("Encrypted token store: ownership")
struct StoreOwnershipTests {
    /// Root (the CLI with no daemon running) writes a store in a directory that the daemon's
    /// user owns: the file must be the daemon's, or it could not read it back.
    @Test(.enabled(if: getuid() == 0)) func rootWritesTheStoreForTheDirectorysOwner() throws {
        let directory = try TemporaryDirectory()
        let keyFile = directory.path + "/store.key"
        try StoreKey.generate(to: keyFile)
        let state = directory.path + "/state"
        mkdir(state, 0o700)
        chown(state, 65534, 65534)
        let path = state + "/tokens.store"
        try EncryptedTokenStore(path: path, key: .keyFile(keyFile)).save(StoredTokens(refreshToken: Secret("rt")))
        var info = stat()
        #expect(stat(path, &info) == 0 && info.st_uid == 65534 && info.st_gid == 65534 && info.st_mode & 0o777 == 0o600)
        #expect(stat(path + ".lock", &info) == 0 && info.st_uid == 65534, "the lock too")
    }
}
