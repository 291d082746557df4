import BearerdAdmin
import BearerdAuth
import BearerdTestSupport
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceLifecycle
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Root's `status` or `logout` talks to the admin socket only when root or the daemon's account
/// serves it, from a directory only they may write; otherwise it refuses before sending a byte
/// (issue 35). The daemon refuses such a directory too.
@Suite(
    "The CLI talks only to the daemon",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    )
)
struct AdminSocketPeerTests {
    static let nobody: uid_t = 65534

    /// A unix socket server that says what it receives ("got N") and answers any request `{}`.
    static let server = #"""
        import socket, sys
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(sys.argv[1])
        s.listen(8)
        print("listening", flush=True)
        s.settimeout(30)
        while True:
            c, _ = s.accept()
            c.settimeout(2)
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
                    print("got", len(chunk), flush=True)
                if data:
                    c.sendall(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}")
            except OSError:
                pass
            c.close()
        """#

    let directory: TemporaryDirectory

    init() throws {
        self.directory = try TemporaryDirectory()
        chmod(self.directory.path, 0o755)
    }

    /// A config whose store is in the test's (root's) directory and whose admin socket is `socket`.
    func config(socket: String) throws -> String {
        let secret = try self.directory.write("peer-client-secret\n", to: "client-secret")
        return try self.directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              token_url: http://127.0.0.1:9/token
              client_id: app
              client_secret_file: \(secret)
            store:
              path: \(self.directory.path)/tokens.store
            admin:
              socket: \(socket)
            """,
            to: "b.yaml"
        )
    }

    enum Placement: String, CaseIterable, CustomStringConvertible {
        /// Where nobody bound it: a directory of nobody's own.
        case inNobodysDirectory = "in nobody's directory"
        /// Moved into a directory of root's and given to root: only the peer shows who serves it.
        case handedToRoot = "handed to root"
        var description: String { self.rawValue }
    }

    @Test(arguments: Placement.allCases, [["status"], ["logout"]])
    func aSocketServedByAnotherUserIsSentNothing(placement: Placement, verb: [String]) async throws {
        let own = self.directory.path + "/nobody"
        mkdir(own, 0o755)
        chown(own, Self.nobody, gid_t(Self.nobody))
        let server = try BearerdProcess(
            program: "/usr/bin/setpriv",
            [
                "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.server,
                own + "/s.sock",
            ]
        )
        defer { server.signal(SIGKILL) }
        try await waitUntil(.seconds(10)) { server.stdout.contains("listening") }
        var socket = own + "/s.sock"
        if placement == .handedToRoot {
            let run = self.directory.path + "/run"
            mkdir(run, 0o700)
            #expect(rename(socket, run + "/admin.sock") == 0)
            socket = run + "/admin.sock"
            lchown(socket, 0, 0)
        }
        let result = try await BearerdProcess.run(verb + ["-c", try self.config(socket: socket)])
        #expect(result.status != 0)
        #expect(result.stderr.contains("uid 65534"), "\(result.stderr)")
        #expect(result.stderr.contains("bearerd does not talk to the admin socket"), "\(result.stderr)")
        try await Task.sleep(for: .milliseconds(200))
        #expect(!server.stdout.contains("got"), "nobody's server received: \(server.stdout)")
    }

    @Test func aDirectoryOthersMayWriteAboveTheSocketIsRefused() async throws {
        let open = self.directory.path + "/open"
        mkdir(open, 0o775)
        chmod(open, 0o775)
        mkdir(open + "/run", 0o700)
        let socket = open + "/run/admin.sock"
        try SpecialFile.socket.make(at: socket)
        let result = try await BearerdProcess.run(["status", "-c", try self.config(socket: socket)])
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(open) may be written by other users"), "\(result.stderr)")
    }

    @Test func theDaemonRefusesADirectoryOthersMayWrite() async throws {
        let open = self.directory.path + "/open"
        mkdir(open, 0o777)
        chmod(open, 0o777)
        mkdir(open + "/run", 0o700)
        let path = open + "/run/admin.sock"
        let token = try self.directory.write("peer-test-token\n", to: "token")
        let logger = Logger(label: "test")
        let provider = try StaticTokenProvider(path: token, logger: logger)
        let api = AdminAPI(backend: .staticToken(provider, path: token), logger: logger)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let ready = AsyncStream.makeStream(of: Void.self)
        let server = AdminServer(path: path, api: api, group: group, logger: logger) { ready.continuation.yield() }
        let services = ServiceGroup(services: [server], logger: logger)
        let (served, failure) = await withTaskGroup(of: Bool.self) { tasks in
            tasks.addTask {
                var readiness = ready.stream.makeAsyncIterator()
                guard await readiness.next() != nil else { return false }
                await services.triggerGracefulShutdown()
                return true
            }
            var failure: String?
            do { try await services.run() } catch { failure = "\(error)" }
            ready.continuation.finish()
            return (await tasks.next() ?? false, failure)
        }
        #expect(!served, "the daemon served in a directory anyone may write")
        #expect(failure?.contains("\(open) may be written by other users") == true, "\(failure ?? "nil")")
        try await group.shutdownGracefully()
    }
}
