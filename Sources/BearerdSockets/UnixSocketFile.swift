import BearerdFiles
import NIOCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File-system steps around a listening unix socket (the proxy's, and the admin socket).
package enum UnixSocketFile {
    /// The longest path a unix socket may have: `sun_path` less its terminating NUL (107 bytes
    /// on Linux, 103 on macOS).
    package static let maxPathLength = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// A name next to `path` to bind first, so mode and group are set before the socket appears
    /// under its real name (no window in which it has a wider mode), and so that the rename
    /// replaces a stale socket at once. In the same directory, so the rename stays within one
    /// file system; and never longer than the kernel allows when `path` itself is allowed, so a
    /// path near the limit gets a short random name instead of the descriptive one.
    package static func temporaryPath(for path: String) -> String {
        let slash = path.lastIndex(of: "/") ?? path.startIndex
        let directory = path[..<slash]
        let name = path[path.index(after: slash)...].prefix(40)
        let descriptive =
            "\(directory)/.\(name).bearerd-\(getpid())-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
        // Room for the name: what the limit leaves after the directory, at least the final name's
        // own length. A path beyond the limit keeps the descriptive name and fails at bind.
        let room = Self.maxPathLength - directory.utf8.count - 1
        guard descriptive.utf8.count > Self.maxPathLength, path.utf8.count <= Self.maxPathLength, room > 0 else {
            return descriptive
        }
        // Random letters and digits; a name that exists already is passed over (the bind would
        // fail on it).
        let length = min(room, 17)
        for _ in 0..<64 {
            let random = String((0..<length).map { _ in Self.alphabet.randomElement() ?? "b" })
            let candidate = "\(directory)/" + (length > 1 ? "." + random.dropFirst() : random)
            var info = stat()
            if candidate != path, lstat(candidate, &info) != 0, errno == ENOENT { return candidate }
        }
        // Every short name taken (a directory of a handful of one-letter files): the bind fails.
        return descriptive
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")

    /// The address of the socket at `path`, up to ``maxPathLength`` bytes. NIO's
    /// `SocketAddress(unixDomainSocketPath:)` stops at 103 bytes, macOS's limit, on every system.
    package static func address(_ path: String) throws -> SocketAddress {
        guard path.utf8.count <= Self.maxPathLength, !path.utf8.contains(0) else {
            throw SocketAddressError.unixDomainSocketPathTooLong
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in path.utf8.enumerated() { raw[offset] = byte }
        }
        return SocketAddress(address)
    }

    /// Refuses to take over a path that is not a socket, or a socket another process still
    /// serves. `key` is the config key the path came from.
    package static func checkReplaceable(_ path: String, key: String = "listen") throws {
        if let problem = Self.placementProblem(path, key: key) { throw SocketSetupError(problem) }
        if Self.isServed(path) {
            throw SocketSetupError(
                "\(key): another process is listening on unix:\(path); stop it or choose another path"
            )
        }
    }

    /// Why a socket may not be created at `path`, without asking who serves one there: a file
    /// that is not a socket stands there, or the directory may be written and emptied by every
    /// user (no sticky bit), so the socket could be swapped under bearerd.
    package static func placementProblem(_ path: String, key: String) -> String? {
        let directory = CheckedDirectory.directoryName(of: path)
        var info = stat()
        if stat(directory, &info) == 0, info.st_mode & 0o002 != 0, info.st_mode & S_ISVTX == 0 {
            return
                "\(key): \(directory) may be written and emptied by every user, so the socket could be swapped under bearerd; choose a directory of bearerd's own"
        }
        if lstat(path, &info) == 0, info.st_mode & S_IFMT != S_IFSOCK {
            return "\(key): \(path) exists and is not a socket; remove it or choose another path"
        }
        return nil
    }

    /// Sets mode and group on the bound temporary socket, then renames it into place.
    package static func publish(
        temporary: String,
        final path: String,
        mode: UInt32,
        group: UInt32?,
        key: String = "listen"
    ) throws {
        // Bound a moment ago: it must still be the socket this process made, not something a
        // user who may write the directory put there (chmod and chown would follow a symlink).
        var info = stat()
        guard lstat(temporary, &info) == 0, info.st_mode & S_IFMT == S_IFSOCK, info.st_uid == geteuid() else {
            throw SocketSetupError(
                "\(key): the socket bearerd bound for \(path) was replaced; check who may write its directory"
            )
        }
        if chmod(temporary, mode_t(mode)) != 0 {
            throw SocketSetupError("\(key): cannot set mode \(String(mode, radix: 8)) on \(path): \(Self.lastError())")
        }
        if let group, lchown(temporary, uid_t.max, gid_t(group)) != 0 {
            throw SocketSetupError("socket_group: cannot give \(path) to group \(group): \(Self.lastError())")
        }
        if rename(temporary, path) != 0 {
            throw SocketSetupError("\(key): cannot create \(path): \(Self.lastError())")
        }
    }

    /// Removes the socket file at shutdown.
    package static func remove(_ path: String) {
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFSOCK { unlink(path) }
    }

    /// Whether a process accepts connections on the socket at `path`.
    package static func isServed(_ path: String) -> Bool {
        Self.connectError(path) == 0
    }

    /// 0 when a connection to the socket at `path` succeeds, else the `errno` of the attempt
    /// (`ENOENT`: no socket; `ECONNREFUSED`: nobody listens; `EACCES`: not allowed).
    /// Bounds a blocking connect(2) on a unix socket to 2 s (`SO_SNDTIMEO`, which Linux applies
    /// to it).
    package static func boundConnect(_ descriptor: Int32) {
        var limit = timeval(tv_sec: 2, tv_usec: 0)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    package static func connectError(_ path: String) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        // A listener whose queue is full keeps a connect waiting: at most 2 s (EAGAIN then).
        Self.boundConnect(descriptor)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in path.utf8.prefix(capacity - 1).enumerated() { raw[offset] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        return connected ? 0 : errno
    }

    private static func lastError() -> String {
        String(cString: strerror(errno))
    }
}
