import BearerdAuth
import BearerdFiles
import BearerdTokens
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The token store on disk: AES-256-GCM (``StoreFormat``), replaced atomically and durably on
/// every save (``AtomicFile``), one daemon at a time (``StoreLock``).
///
/// A wrong key is an error that leaves the file alone. A damaged or truncated file is moved aside
/// to `NAME.corrupt-TIMESTAMP`, never deleted, and the store reads as empty (not logged in).
package final class EncryptedTokenStore: TokenStore {
    package let path: String
    private let profile: String
    private let sealer: StoreSealer
    private let lock: StoreLock
    /// The store's directory, opened once and checked; every file is opened relative to it.
    private let directory: CheckedDirectory
    private let name: String

    /// Opens (and locks) the store at `path`; the file itself may not exist yet.
    package init(path: String, key: StoreKey, profile: String = "default") throws(StoreError) {
        self.path = path
        self.profile = profile
        do throws(FileCheckError) {
            (self.directory, self.name) = try CheckedDirectory.parent(of: path)
        } catch .system(_, let directory, ENOENT), .system(_, let directory, ENOTDIR) {
            throw .io("the token store's directory \(directory) does not exist: create it (mode 0700)")
        } catch {
            throw .io("the token store's directory: \(error)")
        }
        self.lock = try StoreLock.acquire(for: path, in: self.directory, name: self.name)
        self.sealer = try StoreSealer(key: key, profile: profile, place: path)
    }

    /// The largest store file bearerd reads: a few tokens and their metadata, sealed.
    static let maxFileSize = 1 << 20

    package func load() throws -> StoredTokens? {
        try self.checkOpen()
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
        do throws(StoreError) {
            return try self.sealer.open(bytes)
        } catch {
            throw self.placed(error)
        }
    }

    /// An error about sealed bytes, said of this file: damage moves it aside.
    private func placed(_ error: StoreError) -> StoreError {
        switch error.code {
        case .corrupted:
            return self.corrupted(why: error.detail ?? "unreadable")
        case .wrongKey:
            return .wrongKey(self.path)
        case .otherProfile:
            return .otherProfile(self.path, found: error.detail ?? "", configured: self.profile)
        default:
            return error
        }
    }

    package func save(_ tokens: StoredTokens) throws {
        try self.checkOpen()
        try AtomicFile.write(try self.sealer.seal(tokens), to: self.name, in: self.directory)
    }

    /// Releases the lock: its session stopped, and another may open the file now. Nothing is
    /// read or written through this store after that (it would be without the lock).
    package func close() {
        self.lock.release()
    }

    private func checkOpen() throws(StoreError) {
        guard self.lock.isHeld else {
            throw .io("the token store \(self.path) was closed when its session stopped: nothing more is written to it")
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
