import BearerdAuth
import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@testable import BearerdStore

#if canImport(Glibc)
import Glibc
#endif

/// Root running `bearerd login` or `status` while the daemon is stopped works in a directory the
/// daemon's user owns: whatever that user planted there must not make root touch another file.
@Suite("Store files in a directory another user may write", .enabled(if: getuid() == 0))
struct StoreFileSafetyTests {
    let directory: TemporaryDirectory
    let keyFile: String
    let state: String
    /// A root-owned file the daemon's user would like root to chown or truncate.
    let victim: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.keyFile = self.directory.path + "/store.key"
        try StoreKey.generate(to: self.keyFile)
        self.state = self.directory.path + "/state"
        mkdir(self.state, 0o700)
        chown(self.state, 65534, 65534)
        self.victim = try self.directory.write("root's own file\n", to: "victim", mode: 0o644)
    }

    func victimIsUntouched() {
        var info = stat()
        #expect(stat(self.victim, &info) == 0 && info.st_uid == 0 && info.st_mode & 0o777 == 0o644)
        #expect((try? String(contentsOfFile: self.victim, encoding: .utf8)) == "root's own file\n")
    }

    @Test(arguments: ["tokens.store.lock", "tokens.store"])
    func aSymlinkIsRefusedAndNeverFollowed(planted: String) throws {
        symlink(self.victim, self.state + "/" + planted)
        #expect(throws: StoreError.self) {
            let store = try EncryptedTokenStore(path: self.state + "/tokens.store", key: .keyFile(self.keyFile))
            _ = try store.load()
            try store.save(StoredTokens(refreshToken: Secret("rt")))
        }
        self.victimIsUntouched()
    }

    @Test func aHardLinkIsRefused() throws {
        // Made here by root, as protected_hardlinks would stop the daemon's user doing it.
        link(self.victim, self.state + "/tokens.store.lock")
        let error = #expect(throws: StoreError.self) {
            _ = try EncryptedTokenStore(path: self.state + "/tokens.store", key: .keyFile(self.keyFile))
        }
        #expect(error?.description.contains("hard links") == true, "\(String(describing: error))")
        self.victimIsUntouched()
    }

    @Test func aFileOfAThirdUserIsRefused() throws {
        let lock = try self.directory.write("", to: "state/tokens.store.lock")
        chown(lock, 1234, 1234)
        let error = #expect(throws: StoreError.self) {
            _ = try EncryptedTokenStore(path: self.state + "/tokens.store", key: .keyFile(self.keyFile))
        }
        #expect(error?.description.contains("uid 1234") == true, "\(String(describing: error))")
    }

    @Test func theDaemonsOwnLockIsUsedButNotGivenAway() throws {
        let lock = try self.directory.write("", to: "state/tokens.store.lock")
        chown(lock, 65534, 65534)
        let store = try EncryptedTokenStore(path: self.state + "/tokens.store", key: .keyFile(self.keyFile))
        try store.save(StoredTokens(refreshToken: Secret("rt")))
        var info = stat()
        #expect(stat(lock, &info) == 0 && info.st_uid == 65534)
        #expect(stat(self.state + "/tokens.store", &info) == 0 && info.st_uid == 65534 && info.st_mode & 0o777 == 0o600)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: self.state).filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty)
    }
}
