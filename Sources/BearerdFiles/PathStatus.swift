#if canImport(Glibc)
import Glibc
#endif

/// What `lstat(2)` says of a path, for modules that also import Foundation: there a build may
/// take `struct stat` for CoreFoundation's and refuse its members (MemberImportVisibility), so
/// they ask this module, which imports only the C library.
public struct PathStatus: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case directory, regular, link, socket, other
    }

    public let kind: Kind
    /// The permission bits (`mode & 07777`).
    public let permissions: UInt32
    public let owner: UInt32

    public init(kind: Kind, permissions: UInt32, owner: UInt32) {
        self.kind = kind
        self.permissions = permissions
        self.owner = owner
    }

    /// The path itself, a link not followed; nil with `errno` set when it cannot be read.
    public static func of(_ path: String) -> PathStatus? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let kind: Kind =
            switch info.st_mode & S_IFMT {
            case S_IFDIR: .directory
            case S_IFREG: .regular
            case S_IFLNK: .link
            case S_IFSOCK: .socket
            default: .other
            }
        return PathStatus(kind: kind, permissions: UInt32(info.st_mode & 0o7777), owner: UInt32(info.st_uid))
    }
}
