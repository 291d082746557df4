#if canImport(Glibc)
import Glibc
#endif

/// Whether a CLI may trust the process behind a unix socket with a password: the socket must
/// be a socket (not a symlink to one), in a directory nobody but its owner may write, and owned
/// by that directory's owner or by root. Whoever else could have put it there could read
/// what `bearerd login` sends.
package enum SocketTrust {
    /// Why the socket at `path` is not to be trusted, or `nil`.
    package static func problem(_ path: String) -> String? {
        var socketInfo = stat()
        guard lstat(path, &socketInfo) == 0 else { return nil }
        guard socketInfo.st_mode & S_IFMT == S_IFSOCK else {
            return "\(path) is not a socket (a symbolic link or a file stands there)"
        }
        let directory = CheckedDirectory.directoryName(of: path)
        var directoryInfo = stat()
        guard stat(directory, &directoryInfo) == 0 else { return "cannot inspect \(directory)" }
        if directoryInfo.st_mode & 0o022 != 0 {
            return
                "\(directory) may be written by other users, so anyone could have put \(path) there; give the admin socket a directory of the daemon's own (admin.socket)"
        }
        guard socketInfo.st_uid == directoryInfo.st_uid || socketInfo.st_uid == 0 else {
            return
                "\(path) belongs to uid \(socketInfo.st_uid), not to the owner of \(directory) (uid \(directoryInfo.st_uid)) or root"
        }
        return nil
    }
}
