#if canImport(Glibc)
import Glibc
#endif

/// A directory opened once, so every file bearerd opens in it is found relative to that one
/// descriptor (`openat`), never by a path that can change under it.
///
/// A directory is *trusted* when it is owned by root or by this process's user and nobody else
/// may write it. In a directory that is not (the daemon's state directory, when root runs
/// `bearerd login` or `status`), a file is opened with `O_NOFOLLOW` and refused when it is a
/// symlink, not a regular file, has other hard links, or belongs to someone other than root,
/// this user or the directory's owner. bearerd changes the owner only of a file it just created
/// with `O_EXCL`.
///
/// Whatever the directory, nothing that is not a regular file is ever opened for reading or
/// blocks an open: the name is inspected first, every open is `O_NONBLOCK` (a FIFO's open would
/// otherwise wait for a writer for ever, with the store's lock held) and checked with `fstat`
/// before the first read.
package final class CheckedDirectory: Sendable {
    /// The directory's path, for messages.
    package let path: String
    /// `O_RDONLY | O_DIRECTORY` on the directory.
    package let descriptor: Int32
    /// The directory's owner and group.
    package let owner: uid_t
    package let group: gid_t
    /// Owned by root or this user, and writable by nobody else.
    package let isTrusted: Bool

    /// Reads the file at `path` (see ``read(_:limit:)``), opened relative to its checked directory.
    package static func read(file path: String, limit: Int) throws(FileCheckError) -> (bytes: [UInt8], mode: mode_t)? {
        let (directory, name) = try CheckedDirectory.parent(of: path)
        return try directory.read(name, limit: limit)
    }

    /// Reads `path` as ``read(file:limit:)`` does, and follows a symbolic link where the kernel's
    /// `protected_symlinks` rule lets anyone follow one: in a sticky directory owned by root or
    /// this user, a link owned by the directory's owner, whom no one else can replace it for.
    /// Kubernetes mounts a projected token so: `token -> ..data/token`, `..data -> ..2026_…` in a
    /// root-owned directory of mode 1777.
    ///
    /// The directories of `path` itself are the configuration's and are opened as written. From
    /// the first link on, the target is walked a name at a time (`openat` with `O_NOFOLLOW`):
    /// every link on the way must pass the same rule, and a directory entered from one others
    /// may write must belong to root, this user or that directory's owner, so a link or folder
    /// another user planted at a missing `..data` or timestamped name is refused. At most 8
    /// links are followed.
    package static func readFollowingOwnersLinks(
        file path: String,
        limit: Int
    ) throws(FileCheckError) -> (bytes: [UInt8], mode: mode_t)? {
        var (directory, name) = try CheckedDirectory.parent(of: path)
        // What follows `name` on the way, once a link's target is being walked.
        var rest: [String] = []
        var links = 0
        while true {
            let target: String
            if rest.isEmpty {
                do throws(FileCheckError) {
                    return try directory.read(name, limit: limit)
                } catch {
                    guard case .symlink = error, let link = directory.ownersLink(name) else { throw error }
                    target = link
                }
            } else {
                var info = stat()
                guard fstatat(directory.descriptor, name, &info, AT_SYMLINK_NOFOLLOW) == 0 else {
                    if errno == ENOENT { return nil }
                    throw .system("inspect", directory.pathOf(name), errno)
                }
                switch info.st_mode & S_IFMT {
                case S_IFLNK:
                    guard let link = directory.ownersLink(name) else { throw .symlink(directory.pathOf(name)) }
                    target = link
                case S_IFDIR:
                    directory = try directory.subdirectory(name, info)
                    name = rest.removeFirst()
                    continue
                default:
                    throw .notRegular(directory.pathOf(name), FileCheckError.kindName(info.st_mode & S_IFMT))
                }
            }
            links += 1
            guard links <= 8 else { throw .symlink(path) }
            let names = target.split(separator: "/").map(String.init).filter { $0 != "." } + rest
            guard let first = names.first else { throw .notAFile(directory.pathOf(name)) }
            if target.hasPrefix("/") { directory = try CheckedDirectory("/") }
            name = first
            rest = Array(names.dropFirst())
        }
    }

    /// The directory `name` here, described by `info` (not followed), opened without following a
    /// link put in its place meanwhile. In a directory others may write, it must belong to root,
    /// this user or this directory's owner.
    private func subdirectory(_ name: String, _ info: stat) throws(FileCheckError) -> CheckedDirectory {
        if !self.isTrusted, info.st_uid != 0, info.st_uid != geteuid(), info.st_uid != self.owner {
            throw .foreignOwner(self.pathOf(name), owner: info.st_uid)
        }
        let descriptor = openat(
            self.descriptor,
            name,
            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY
        )
        guard descriptor >= 0 else { throw .system("open the directory", self.pathOf(name), errno) }
        let opened = try CheckedDirectory(descriptor: descriptor, path: self.pathOf(name))
        // What was opened is what was looked at (not a directory swapped in between).
        guard opened.owner == info.st_uid else { throw .foreignOwner(opened.path, owner: opened.owner) }
        return opened
    }

    /// The target of the link `name` when the kernel would let anyone follow it here: this
    /// directory is sticky and owned by root or this user, and the link by the same owner.
    private func ownersLink(_ name: String) -> String? {
        var directory = stat()
        var link = stat()
        guard fstat(self.descriptor, &directory) == 0, directory.st_mode & S_ISVTX != 0,
            self.owner == 0 || self.owner == geteuid(),
            fstatat(self.descriptor, name, &link, AT_SYMLINK_NOFOLLOW) == 0,
            link.st_mode & S_IFMT == S_IFLNK, link.st_uid == self.owner
        else { return nil }
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlinkat(self.descriptor, name, &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Opens `path` (symlinks in the path itself are followed: systemd's `StateDirectory=` is one).
    package convenience init(_ path: String) throws(FileCheckError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else { throw .system("open the directory", path, errno) }
        try self.init(descriptor: descriptor, path: path)
    }

    /// Takes an open directory `descriptor` (closed on failure).
    private init(descriptor: Int32, path: String) throws(FileCheckError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let code = errno
            close(descriptor)
            throw .system("inspect the directory", path, code)
        }
        self.path = path
        self.descriptor = descriptor
        self.owner = info.st_uid
        self.group = info.st_gid
        let ownerIsUs = info.st_uid == 0 || info.st_uid == geteuid()
        let othersWrite = info.st_mode & 0o022 != 0
        self.isTrusted = ownerIsUs && !othersWrite
    }

    /// The directory part of `path`: `/` for `/x`, `.` for a bare name.
    package static func directoryName(of path: String) -> String {
        let slash = path.lastIndex(of: "/")
        return slash.map { $0 == path.startIndex ? "/" : String(path[..<$0]) } ?? "."
    }

    /// The directory that holds `path`, and the file's name in it.
    package static func parent(of path: String) throws(FileCheckError) -> (CheckedDirectory, String) {
        let slash = path.lastIndex(of: "/")
        let directory = Self.directoryName(of: path)
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty, name != ".", name != ".." else { throw .notAFile(path) }
        return (try CheckedDirectory(directory), name)
    }

    deinit { close(self.descriptor) }

    /// The full path of `name`, for messages.
    package func pathOf(_ name: String) -> String {
        self.path.hasSuffix("/") ? self.path + name : self.path + "/" + name
    }

    /// Opens an existing file with `flags` (no `O_CREAT`), checked as the type describes. The
    /// descriptor is blocking again once it is known to be a regular file.
    /// - Returns: the descriptor, or `nil` when there is no such file.
    package func openExisting(_ name: String, flags: Int32) throws(FileCheckError) -> Int32? {
        let follow = self.isTrusted ? 0 : O_NOFOLLOW
        // A FIFO, socket or device is refused before it is opened (opening a device can act).
        var info = stat()
        let lookFlags = self.isTrusted ? 0 : AT_SYMLINK_NOFOLLOW
        if fstatat(self.descriptor, name, &info, lookFlags) == 0 {
            try self.checkType(info, name)
        }
        // Still non-blocking, for what takes its place in between.
        let descriptor = openat(self.descriptor, name, flags | follow | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
        guard descriptor >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ELOOP { throw .symlink(self.pathOf(name)) }
            // ENXIO: a FIFO with no reader or a socket, put there after the look above.
            if code == ENXIO, fstatat(self.descriptor, name, &info, lookFlags) == 0 {
                try self.checkType(info, name)
            }
            throw .system("open", self.pathOf(name), code)
        }
        do throws(FileCheckError) {
            try self.check(descriptor, name)
            let status = fcntl(descriptor, F_GETFL)
            guard status >= 0, fcntl(descriptor, F_SETFL, status & ~O_NONBLOCK) == 0 else {
                throw .system("open", self.pathOf(name), errno)
            }
        } catch {
            close(descriptor)
            throw error
        }
        return descriptor
    }

    /// Creates `name`, which must not exist yet (`O_EXCL`, so never through a symlink), with
    /// `mode`. Root creating it in a directory another user owns gives it to that owner, so the
    /// daemon running as that user can use it.
    package func create(_ name: String, flags: Int32, mode: mode_t) throws(FileCheckError) -> Int32 {
        let descriptor = openat(
            self.descriptor,
            name,
            flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
            mode
        )
        guard descriptor >= 0 else { throw .system("create", self.pathOf(name), errno) }
        if geteuid() == 0, self.owner != 0, fchown(descriptor, self.owner, self.group) != 0 {
            let code = errno
            close(descriptor)
            unlinkat(self.descriptor, name, 0)
            throw .system("give to the directory's owner", self.pathOf(name), code)
        }
        return descriptor
    }

    /// Reads a whole file of at most `limit` bytes, checked as for ``openExisting(_:flags:)``.
    /// - Returns: the bytes and the file's permission bits, or `nil` when there is no such file.
    package func read(_ name: String, limit: Int) throws(FileCheckError) -> (bytes: [UInt8], mode: mode_t)? {
        guard let descriptor = try self.openExisting(name, flags: O_RDONLY) else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("inspect", self.pathOf(name), errno) }
        let mode = info.st_mode & 0o7777
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count >= 0 else { throw .system("read", self.pathOf(name), errno) }
            if count == 0 { return (bytes, mode) }
            guard bytes.count + count <= limit else { throw .tooLarge(self.pathOf(name), limit: limit) }
            bytes += chunk[..<count]
        }
    }

    /// Renames `from` over `to`, both in this directory.
    package func rename(_ from: String, to: String) throws(FileCheckError) {
        guard renameat(self.descriptor, from, self.descriptor, to) == 0 else {
            throw .system("rename into place", self.pathOf(to), errno)
        }
    }

    /// Removes `name` (a symlink itself, never what it points at).
    package func remove(_ name: String) {
        unlinkat(self.descriptor, name, 0)
    }

    /// Flushes the directory, so a rename in it survives a power loss.
    package func sync() throws(FileCheckError) {
        guard fsync(self.descriptor) == 0 else { throw .system("sync", self.path, errno) }
    }

    /// A regular file with one link, owned by root, this user or the directory's owner.
    private func check(_ descriptor: Int32, _ name: String) throws(FileCheckError) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw .system("inspect", self.pathOf(name), errno) }
        try self.checkType(info, name)
        guard !self.isTrusted else { return }
        guard info.st_nlink == 1 else { throw .linked(self.pathOf(name)) }
        guard info.st_uid == 0 || info.st_uid == geteuid() || info.st_uid == self.owner else {
            throw .foreignOwner(self.pathOf(name), owner: info.st_uid)
        }
    }

    /// A regular file, or an error that says what stands there instead.
    private func checkType(_ info: stat, _ name: String) throws(FileCheckError) {
        let kind = info.st_mode & S_IFMT
        guard kind != S_IFREG else { return }
        guard kind != S_IFLNK else { throw .symlink(self.pathOf(name)) }
        throw .notRegular(self.pathOf(name), FileCheckError.kindName(kind))
    }
}
