#if canImport(Glibc)
import Glibc
#endif

/// A file bearerd would not open, or could not; the message says which file and what to do.
package enum FileCheckError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A symlink where bearerd opens a file in a directory others may write.
    case symlink(String)
    /// A path that names no file (it ends in `/`, `.` or `..`).
    case notAFile(String)
    /// Something other than a regular file stands there: what it is ("a FIFO", "a directory").
    case notRegular(String, String)
    /// A regular file with more than one hard link, in a directory others may write.
    case linked(String)
    /// Owned by neither root, bearerd's user nor the directory's owner.
    case foreignOwner(String, owner: uid_t)
    /// Larger than bearerd ever reads for this kind of file.
    case tooLarge(String, limit: Int)
    /// A system call failed: what bearerd tried, the path, and `errno`.
    case system(String, String, Int32)

    package var description: String {
        switch self {
        case .symlink(let path):
            "\(path) is a symbolic link in a directory others may write; bearerd does not follow it: remove it"
        case .notAFile(let path):
            "\(path) is not a regular file"
        case .notRegular(let path, let kind):
            "\(path) is \(kind), not a regular file: remove it"
        case .linked(let path):
            "\(path) has other hard links, in a directory others may write; bearerd does not use it: remove it"
        case .foreignOwner(let path, let owner):
            "\(path) belongs to uid \(owner), neither root, bearerd's user nor the directory's owner; bearerd does not use it: remove it or change its owner"
        case .tooLarge(let path, let limit):
            "\(path) is larger than \(limit) bytes, more than such a file ever holds"
        case .system(let what, let path, let code):
            "cannot \(what) \(path): \(String(cString: strerror(code)))"
        }
    }

    /// What a file of type `kind` (`st_mode & S_IFMT`) is, for a message.
    package static func kindName(_ kind: mode_t) -> String {
        switch kind {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFDIR: "a directory"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFLNK: "a symbolic link"
        default: "of an unknown type"
        }
    }

    /// The `errno` of a failed system call, if this is one.
    package var code: Int32? {
        if case .system(_, _, let code) = self { return code }
        return nil
    }
}
