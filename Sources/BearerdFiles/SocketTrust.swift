#if canImport(Glibc)
import Glibc
#endif

/// Whether a CLI may trust the process behind a unix socket with a password, and whether the
/// daemon may put its admin socket in a directory.
///
/// Only root and the daemon's own account may stand behind the admin socket: the socket file
/// must belong to one of them, and so must every directory above it, none of which others may
/// write — else whoever could create or rename an entry on the way could have put their own
/// socket there first. The one exception is a sticky directory such as `/tmp` *above* the
/// socket's own directory: nobody can rename what another put there, and the directory below it
/// must still belong to root or the daemon. The connected peer (`SO_PEERCRED`) is checked too,
/// with ``peerProblem(_:socket:)``.
package struct SocketTrust: Sendable {
    /// The daemon's account as the token store shows it, if it shows one.
    package let daemonAccount: uid_t?
    /// Root, this process's user and the daemon's account.
    package let accounts: Set<uid_t>

    /// Trusts root, this process's user and `daemonAccount`.
    package init(daemonAccount: uid_t?) {
        self.daemonAccount = daemonAccount
        self.accounts = Set([0, geteuid()] + (daemonAccount.map { [$0] } ?? []))
    }

    /// Trusts root, this process's user and the daemon's account, found from the token store at
    /// `storePath` (``daemonAccount(storePath:)``).
    package init(storePath: String) {
        self.init(daemonAccount: Self.daemonAccount(storePath: storePath))
    }

    /// The owner of the store file or of its lock file (the daemon takes the lock whenever it
    /// runs), else of the store's directory (systemd's `StateDirectory=` belongs to the unit's
    /// user). Only from a directory others may not write: there, anyone could make such a file.
    package static func daemonAccount(storePath: String) -> uid_t? {
        var directory = stat()
        guard stat(CheckedDirectory.directoryName(of: storePath), &directory) == 0,
            directory.st_mode & S_IFMT == S_IFDIR, directory.st_mode & 0o022 == 0
        else { return nil }
        for file in [storePath + ".lock", storePath] {
            var info = stat()
            if lstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                info.st_uid == directory.st_uid || directory.st_uid == 0
            {
                return info.st_uid
            }
        }
        return directory.st_uid
    }

    /// Why the socket at `path` is not to be trusted, or `nil` (also when there is no socket:
    /// nothing to trust or refuse).
    package func problem(_ path: String) -> String? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        guard info.st_mode & S_IFMT == S_IFSOCK else {
            return "\(path) is not a socket (a symbolic link or a file stands there)"
        }
        if let problem = self.ownerProblem(path, info.st_uid) { return problem }
        return self.directoryProblem(CheckedDirectory.directoryName(of: path))
    }

    /// Why a socket in `directory` could have been put there by someone other than root or the
    /// daemon, or `nil`: checked on the path as written and with its symbolic links resolved.
    package func directoryProblem(_ directory: String) -> String? {
        guard let resolved = realpath(directory, nil) else {
            return "cannot inspect \(directory): \(String(cString: strerror(errno)))"
        }
        let real = String(cString: resolved)
        free(resolved)
        if directory.hasPrefix("/"), let problem = self.chainProblem(directory) { return problem }
        return real == directory ? nil : self.chainProblem(real)
    }

    /// Why the connected peer, running as `uid`, is not to be trusted, or `nil`.
    package func peerProblem(_ uid: uid_t, socket: String) -> String? {
        guard !self.accounts.contains(uid) else { return nil }
        return
            "the process serving \(socket) runs as uid \(uid), not \(self.trusted): bearerd sends it nothing; stop that process and start bearerd serve"
    }

    /// Each directory from `/` down to `directory` (absolute).
    private func chainProblem(_ directory: String) -> String? {
        var prefixes = ["/"]
        var current = ""
        for component in directory.split(separator: "/") {
            current += "/" + String(component)
            prefixes.append(current)
        }
        for (index, prefix) in prefixes.enumerated() {
            var info = stat()
            guard lstat(prefix, &info) == 0 else {
                return "cannot inspect \(prefix): \(String(cString: strerror(errno)))"
            }
            if let problem = self.ownerProblem(prefix, info.st_uid) { return problem }
            // A symlink's own mode means nothing; where it leads is checked as the resolved path.
            guard info.st_mode & S_IFMT != S_IFLNK, info.st_mode & 0o022 != 0 else { continue }
            let isSocketsOwn = index == prefixes.count - 1
            if isSocketsOwn || info.st_mode & S_ISVTX == 0 {
                let mode = String(info.st_mode & 0o7777, radix: 8)
                return
                    "\(prefix) may be written by other users (mode 0\(mode)), so anyone could have put the admin socket there first: give it a directory that only root or the daemon's account may write (admin.socket)"
            }
        }
        return nil
    }

    private func ownerProblem(_ path: String, _ owner: uid_t) -> String? {
        guard !self.accounts.contains(owner) else { return nil }
        return "\(path) is owned by uid \(owner), not \(self.trusted): fix its owner or choose another admin.socket"
    }

    /// "root or the daemon's account (uid N)", for messages.
    private var trusted: String {
        var names = ["root"]
        if let account = self.daemonAccount, account != 0 { names.append("the daemon's account (uid \(account))") }
        let me = geteuid()
        if me != 0, me != self.daemonAccount { names.append("uid \(me) (yours)") }
        return names.count == 1 ? names[0] : names.dropLast().joined(separator: ", ") + " or " + names[names.count - 1]
    }
}
