import BearerdTestSupport
import BearerdTokens
import Foundation
import Testing

@testable import BearerdAuth
@testable import BearerdStore

#if canImport(Glibc)
import Glibc
#endif

/// The daemon's account owns the store's directory and can put a FIFO, a socket or a directory
/// where the store, its lock or a key should be. Root's `status`, `login` or `check-config` must
/// then stop at once with an error that names the file, never wait in `open()` with the lock held
/// (issue 35).
@Suite("Files that are not regular files", .timeLimit(.minutes(1)))
struct NotRegularFileTests {
    let directory: TemporaryDirectory
    let keyFile: String
    let store: String

    init() throws {
        self.directory = try TemporaryDirectory()
        self.keyFile = self.directory.path + "/store.key"
        try StoreKey.generate(to: self.keyFile)
        self.store = self.directory.path + "/tokens.store"
    }

    /// A character device is made with mknod, which needs root.
    static let kinds = SpecialFile.allCases.filter { $0 != .characterDevice || getuid() == 0 }

    /// What `body` throws, said as its message; `jammed` when it blocked until a writer came.
    func failure(on fifo: String, _ body: @escaping @Sendable () throws -> Void) async throws -> (String?, Bool) {
        let (message, jammed) = try await withoutBlocking(on: [fifo]) { () -> String? in
            do {
                try body()
                return nil
            } catch {
                return "\(error)"
            }
        }
        return (message, jammed)
    }

    @Test(arguments: NotRegularFileTests.kinds)
    func aStoreThatIsNotARegularFileIsRefusedAtOnce(kind: SpecialFile) async throws {
        try kind.make(at: self.store)
        let (store, key) = (self.store, self.keyFile)
        let (message, jammed) = try await self.failure(on: store) {
            _ = try EncryptedTokenStore(path: store, key: .keyFile(key)).load()
        }
        #expect(!jammed, "the read waited in open()")
        #expect(message?.contains("\(store) is \(kind), not a regular file: remove it") == true, "\(message ?? "nil")")
        // The failed read let go of the lock: the next command gets it.
        #expect(throws: Never.self) { _ = try EncryptedTokenStore(path: store, key: .keyFile(key)) }
    }

    @Test(arguments: NotRegularFileTests.kinds)
    func aLockThatIsNotARegularFileIsRefusedAtOnce(kind: SpecialFile) async throws {
        let lock = self.store + ".lock"
        try kind.make(at: lock)
        let (store, key) = (self.store, self.keyFile)
        let (message, jammed) = try await self.failure(on: lock) {
            _ = try EncryptedTokenStore(path: store, key: .keyFile(key))
        }
        #expect(!jammed, "the lock's open waited")
        #expect(message?.contains("\(lock) is \(kind), not a regular file: remove it") == true, "\(message ?? "nil")")
    }

    @Test(arguments: NotRegularFileTests.kinds)
    func aKeyThatIsNotARegularFileIsRefusedAtOnce(kind: SpecialFile) async throws {
        let key = self.directory.path + "/other.key"
        try kind.make(at: key)
        for source in [StoreKey.keyFile(key), .passphraseFile(key)] {
            let (message, jammed) = try await self.failure(on: key) { _ = try source.material() }
            #expect(!jammed, "reading \(source) waited in open()")
            #expect(
                message?.contains("\(key) is \(kind), not a regular file: remove it") == true,
                "\(message ?? "nil")"
            )
        }
    }

    @Test(arguments: NotRegularFileTests.kinds)
    func aSecretFileThatIsNotARegularFileIsRefusedAtOnce(kind: SpecialFile) async throws {
        let secret = self.directory.path + "/token"
        try kind.make(at: secret)
        let (message, jammed) = try await self.failure(on: secret) { _ = try StaticTokenProvider.read(path: secret) }
        #expect(!jammed, "reading the secret waited in open()")
        #expect(message?.contains("\(secret) is \(kind), not a regular file: remove it") == true, "\(message ?? "nil")")
    }

    @Test func checkConfigsLookAtAFIFOStoreDoesNotWait() async throws {
        try SpecialFile.fifo.make(at: self.store)
        let (store, key) = (self.store, self.keyFile)
        let (findings, jammed) = try await withoutBlocking(on: [store]) {
            StoreCheck.findings(path: store, key: .keyFile(key), profile: "").errors
        }
        #expect(!jammed, "check-config's look at the store waited in open()")
        #expect(findings.contains { $0.contains("\(store) is a FIFO, not a regular file: remove it") }, "\(findings)")
    }
}
