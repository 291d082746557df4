import BearerdFiles
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// One daemon per store: an exclusive `flock` on `STORE.lock`, held while this object lives.
/// The holder's pid is written into the lock file, so a second daemon can say who holds it.
///
/// The lock file is opened in the store's checked directory: never through a symlink, never one
/// that belongs to someone else, and given to the directory's owner only when bearerd has just
/// created it (root running `bearerd status` while the daemon is stopped must not be led to
/// chown or truncate another file).
final class StoreLock: Sendable {
    /// The lock file's descriptor; `nil` once released.
    private let descriptor: Mutex<Int32?>

    private init(descriptor: Int32) {
        self.descriptor = Mutex(descriptor)
    }

    /// Whether the lock is still held.
    var isHeld: Bool { self.descriptor.withLock { $0 != nil } }

    /// Lets the lock go (closing its descriptor releases the `flock`); once.
    func release() {
        self.descriptor.withLock { descriptor in
            if let held = descriptor { close(held) }
            descriptor = nil
        }
    }

    static func acquire(for path: String, in directory: CheckedDirectory, name: String) throws(StoreError) -> StoreLock
    {
        let lockName = name + ".lock"
        let descriptor: Int32
        do throws(FileCheckError) {
            if let existing = try directory.openExisting(lockName, flags: O_RDWR) {
                descriptor = existing
            } else {
                descriptor = try directory.create(lockName, flags: O_RDWR, mode: 0o600)
            }
        } catch .system(let what, let file, EEXIST) {
            throw .io("cannot \(what) \(file): another process created it at the same moment; try again")
        } catch {
            throw .permissions("the token store's lock: \(error)")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.holder(descriptor)
            close(descriptor)
            throw .inUse(path, holderPID: holder)
        }
        let record = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) != 0 || pwrite(descriptor, record, record.count, 0) != record.count {
            close(descriptor)
            throw .io("cannot write \(directory.pathOf(lockName)): \(String(cString: strerror(errno)))")
        }
        return StoreLock(descriptor: descriptor)
    }

    private static func holder(_ descriptor: Int32) -> Int? {
        var buffer = [UInt8](repeating: 0, count: 32)
        let count = pread(descriptor, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return Int(String(decoding: buffer[..<count], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }

    deinit {
        self.release()
    }
}
