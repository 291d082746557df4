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
    /// Root and this user; no daemon's account known.
    static let trust = SocketTrust(daemonAccount: nil)

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
        #expect(Self.trust.problem(directory.path + "/admin.sock") == nil)
        #expect(Self.trust.problem(directory.path + "/absent.sock") == nil, "no socket: nothing to trust or refuse")
    }

    @Test func aSocketInADirectoryOthersMayWriteIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o1777)
        let descriptor = Self.socketFile(directory.path + "/admin.sock")
        defer { close(descriptor) }
        let problem = Self.trust.problem(directory.path + "/admin.sock")
        #expect(problem?.contains("may be written by other users") == true, "\(problem ?? "nil")")
    }

    @Test func aSymlinkToASocketIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o700)
        let descriptor = Self.socketFile(directory.path + "/real.sock")
        defer { close(descriptor) }
        symlink(directory.path + "/real.sock", directory.path + "/admin.sock")
        #expect(Self.trust.problem(directory.path + "/admin.sock")?.contains("not a socket") == true)
    }

    @Test(.enabled(if: getuid() == 0)) func aSocketOfAnotherUserIsRefused() throws {
        let directory = try TemporaryDirectory()
        chmod(directory.path, 0o700)
        let descriptor = Self.socketFile(directory.path + "/admin.sock")
        defer { close(descriptor) }
        lchown(directory.path + "/admin.sock", 1234, 1234)
        #expect(Self.trust.problem(directory.path + "/admin.sock")?.contains("uid 1234") == true)
    }

    /// `directory/outer/inner/admin.sock`, bound, with `outer` given `mode`; `inner` is 0700.
    static func nested(in directory: TemporaryDirectory, outerMode: mode_t) -> (socket: String, outer: String, Int32) {
        let outer = directory.path + "/outer"
        mkdir(outer, 0o700)
        chmod(outer, outerMode)
        mkdir(outer + "/inner", 0o700)
        let socket = outer + "/inner/admin.sock"
        return (socket, outer, Self.socketFile(socket))
    }

    @Test(arguments: [0o770, 0o775, 0o707, 0o777])
    func aDirectoryOthersMayWriteAnywhereAboveTheSocketIsRefused(mode: Int) throws {
        let directory = try TemporaryDirectory()
        let (socket, outer, descriptor) = Self.nested(in: directory, outerMode: mode_t(mode))
        defer { close(descriptor) }
        let problem = Self.trust.problem(socket)
        #expect(problem?.contains("\(outer) may be written by other users") == true, "\(problem ?? "nil")")
    }

    /// Like /tmp: nobody may rename what another put there, and what is below it is root's.
    @Test func aStickyDirectoryAboveADirectoryOfRootsIsAccepted() throws {
        let directory = try TemporaryDirectory()
        let (socket, _, descriptor) = Self.nested(in: directory, outerMode: 0o1777)
        defer { close(descriptor) }
        #expect(Self.trust.problem(socket) == nil)
        // But a sticky directory is no place for the socket itself: anyone can create there first.
        chmod(directory.path + "/outer/inner", 0o1777)
        #expect(Self.trust.problem(socket)?.contains("may be written by other users") == true)
    }

    @Test(.enabled(if: getuid() == 0)) func aDirectoryOfAnotherUserAboveTheSocketIsRefused() throws {
        let directory = try TemporaryDirectory()
        let (socket, outer, descriptor) = Self.nested(in: directory, outerMode: 0o755)
        defer { close(descriptor) }
        chown(outer, 65534, 65534)
        let problem = Self.trust.problem(socket)
        #expect(
            problem?.contains("\(outer) is owned by uid 65534, not root: fix its owner") == true,
            "\(problem ?? "nil")"
        )
    }

    @Test func aSymlinkedDirectoryIsCheckedWhereItLeads() throws {
        let directory = try TemporaryDirectory()
        let (_, outer, descriptor) = Self.nested(in: directory, outerMode: 0o777)
        defer { close(descriptor) }
        symlink(outer + "/inner", directory.path + "/link")
        let problem = Self.trust.problem(directory.path + "/link/admin.sock")
        #expect(problem?.contains("\(outer) may be written by other users") == true, "\(problem ?? "nil")")
    }

    /// The store's lock (taken by the daemon whenever it runs) says whose the daemon is; a
    /// socket of that account in its own directory is trusted, another account's is not.
    @Test(.enabled(if: getuid() == 0)) func theDaemonsAccountIsTheOwnerOfTheStoresLock() throws {
        let directory = try TemporaryDirectory()
        let state = directory.path + "/state"
        mkdir(state, 0o700)
        let lock = try directory.write("", to: "state/tokens.store.lock")
        chown(lock, 65534, 65534)
        let trust = SocketTrust(storePath: state + "/tokens.store")
        #expect(trust.daemonAccount == 65534)
        let run = directory.path + "/run"
        mkdir(run, 0o700)
        chown(run, 65534, 65534)
        let descriptor = Self.socketFile(run + "/admin.sock")
        defer { close(descriptor) }
        lchown(run + "/admin.sock", 65534, 65534)
        #expect(trust.problem(run + "/admin.sock") == nil)
        #expect(trust.peerProblem(65534, socket: run + "/admin.sock") == nil)
        #expect(trust.peerProblem(0, socket: run + "/admin.sock") == nil)
        let peer = trust.peerProblem(1234, socket: run + "/admin.sock")
        #expect(peer?.contains("runs as uid 1234, not root or the daemon's account (uid 65534)") == true)
        // A lock in a directory others may write says nothing: anyone could have made it.
        chmod(state, 0o777)
        #expect(SocketTrust(storePath: state + "/tokens.store").daemonAccount == nil)
    }
}
