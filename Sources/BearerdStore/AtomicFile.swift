import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file so that a crash at any moment leaves the old content or the new, never a mix:
/// a temp file in the same directory, written, fsynced, renamed over the old one, and the
/// directory fsynced so the rename itself survives a power loss. Mode 0600 from the start.
enum AtomicFile {
    static func write(_ bytes: [UInt8], to path: String) throws(StoreError) {
        let url = URL(fileURLWithPath: path)
        let directory = url.deletingLastPathComponent().path
        let temporary = directory + "/." + url.lastPathComponent + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw Self.failure("create", temporary) }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let error = Self.failure("write", temporary)
                close(descriptor)
                unlink(temporary)
                throw error
            }
            offset += written
        }
        // Root writing into a directory the daemon owns (`bearerd login` with no daemon running,
        // under DynamicUser=): the file goes to the directory's owner, or the daemon could not
        // read it back.
        var directoryInfo = stat()
        if geteuid() == 0, stat(directory, &directoryInfo) == 0, directoryInfo.st_uid != 0,
            fchown(descriptor, directoryInfo.st_uid, directoryInfo.st_gid) != 0
        {
            let error = Self.failure("give to the directory's owner", temporary)
            close(descriptor)
            unlink(temporary)
            throw error
        }
        guard fchmod(descriptor, 0o600) == 0, fsync(descriptor) == 0 else {
            let error = Self.failure("sync", temporary)
            close(descriptor)
            unlink(temporary)
            throw error
        }
        close(descriptor)
        guard rename(temporary, path) == 0 else {
            let error = Self.failure("rename into place", path)
            unlink(temporary)
            throw error
        }
        try Self.syncDirectory(directory)
    }

    static func syncDirectory(_ directory: String) throws(StoreError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw Self.failure("open", directory) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw Self.failure("sync", directory) }
    }

    private static func failure(_ what: String, _ path: String) -> StoreError {
        .io("cannot \(what) \(path): \(String(cString: strerror(errno)))")
    }
}
