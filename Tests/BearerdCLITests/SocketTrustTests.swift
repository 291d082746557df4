import BearerdFiles
import BearerdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The CLI sends a password only to an admin socket nobody else could have put in place.
@Suite("Admin socket trust")
struct SocketTrustTests {
    /// A bound unix socket at `path` (nothing needs to accept on it for these checks).
    static func socketFile(_ path: String) -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in path.utf8.enumerated() { raw[offset] = byte }
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        return descriptor
    }

    @Test func aSocketInTheDaemonsOwnDirectoryIsTrusted() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o700)
        let descriptor = Self.socketFile(directory.path + "/admin.sock")
        defer { close(descriptor) }
        #expect(SocketTrust.problem(directory.path + "/admin.sock") == nil)
        #expect(SocketTrust.problem(directory.path + "/absent.sock") == nil, "no socket: nothing to trust or refuse")
    }

    @Test func aSocketInADirectoryOthersMayWriteIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o1777)
        let descriptor = Self.socketFile(directory.path + "/admin.sock")
        defer { close(descriptor) }
        let problem = SocketTrust.problem(directory.path + "/admin.sock")
        #expect(problem?.contains("may be written by other users") == true, "\(problem ?? "nil")")
    }

    @Test func aSymlinkToASocketIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o700)
        let descriptor = Self.socketFile(directory.path + "/real.sock")
        defer { close(descriptor) }
        symlink(directory.path + "/real.sock", directory.path + "/admin.sock")
        #expect(SocketTrust.problem(directory.path + "/admin.sock")?.contains("not a socket") == true)
    }

    @Test(.enabled(if: getuid() == 0)) func aSocketOfAnotherUserIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o700)
        let descriptor = Self.socketFile(directory.path + "/admin.sock")
        defer { close(descriptor) }
        lchown(directory.path + "/admin.sock", 1234, 1234)
        #expect(SocketTrust.problem(directory.path + "/admin.sock")?.contains("uid 1234") == true)
    }
}
