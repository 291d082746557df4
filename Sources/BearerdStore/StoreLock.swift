import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// One daemon per store: an exclusive `flock` on `STORE.lock`, held while this object lives.
/// The holder's pid is written into the lock file, so a second daemon can say who holds it.
final class StoreLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    static func acquire(for path: String) throws(StoreError) -> StoreLock {
        let lockPath = path + ".lock"
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw .io("cannot open \(lockPath): \(String(cString: strerror(errno)))")
        }
        // Made by root for a daemon that runs as another user: it must be able to open it too.
        var directory = stat()
        let parent = URL(fileURLWithPath: lockPath).deletingLastPathComponent().path
        if geteuid() == 0, stat(parent, &directory) == 0, directory.st_uid != 0 {
            _ = fchown(descriptor, directory.st_uid, directory.st_gid)
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = Self.holder(descriptor)
            close(descriptor)
            throw .inUse(
                "the token store \(path) is in use by another bearerd\(holder.map { " (pid \($0))" } ?? ""): stop it first; `bearerd login`, `status` and `token` go through the running daemon"
            )
        }
        let record = Array("\(getpid())\n".utf8)
        if ftruncate(descriptor, 0) != 0 || pwrite(descriptor, record, record.count, 0) != record.count {
            close(descriptor)
            throw .io("cannot write \(lockPath): \(String(cString: strerror(errno)))")
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
        close(self.descriptor)
    }
}
