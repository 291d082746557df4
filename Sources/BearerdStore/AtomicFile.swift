import BearerdFiles

#if canImport(Glibc)
import Glibc
#endif

/// Replaces a file so that a crash at any moment leaves the old content or the new, never a mix:
/// a temp file created new (`O_EXCL`, a random name) in the same checked directory, written,
/// fsynced, renamed over the old one, and the directory fsynced so the rename itself survives a
/// power loss. Mode 0600 from the start; root writing into a directory the daemon owns gives
/// the new file to the directory's owner.
enum AtomicFile {
    static func write(_ bytes: [UInt8], to name: String, in directory: CheckedDirectory) throws(StoreError) {
        let suffix = (try? StoreCipher.randomBytes(6))?.map { String($0, radix: 16) }.joined() ?? "\(getpid())"
        let temporary = "." + name + ".tmp-" + suffix
        let descriptor: Int32
        do throws(FileCheckError) {
            descriptor = try directory.create(temporary, flags: O_WRONLY, mode: 0o600)
        } catch {
            throw .io("\(error)")
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else {
                let error = Self.failure("write", directory.pathOf(temporary))
                close(descriptor)
                directory.remove(temporary)
                throw error
            }
            offset += written
        }
        guard fchmod(descriptor, 0o600) == 0, fsync(descriptor) == 0 else {
            let error = Self.failure("sync", directory.pathOf(temporary))
            close(descriptor)
            directory.remove(temporary)
            throw error
        }
        close(descriptor)
        do throws(FileCheckError) {
            try directory.rename(temporary, to: name)
        } catch {
            directory.remove(temporary)
            throw .io("\(error)")
        }
        do throws(FileCheckError) { try directory.sync() } catch { throw .io("\(error)") }
    }

    private static func failure(_ what: String, _ path: String) -> StoreError {
        .io("cannot \(what) \(path): \(String(cString: strerror(errno)))")
    }
}
