import AsyncHTTPClient
import BearerdTestSupport
import Foundation
import Logging
import Testing

@testable import BearerdCLI

#if canImport(Glibc)
import Glibc
#endif

/// Root's `status` and `check-config` on a store the daemon's account replaced with a FIFO: an
/// error naming the file at once, not a command blocked in `open()` with the store's lock held
/// (issue 35).
@Suite("Commands on a store that is a FIFO", .serialized, .timeLimit(.minutes(1)))
struct NotRegularStoreTests {
    let directory: TemporaryDirectory
    let config: String
    let store: String

    init() async throws {
        self.directory = try TemporaryDirectory()
        let secret = try self.directory.write("fifo-client-secret\n", to: "client-secret")
        let keygen = try await BearerdProcess.run(["keygen", "--out", self.directory.path + "/store.key"])
        guard keygen.status == 0 else { throw TestClientError("keygen failed: \(keygen.stderr)") }
        self.store = self.directory.path + "/tokens.store"
        self.config = try self.directory.write(
            """
            listen: ["127.0.0.1:0"]
            upstream:
              url: http://127.0.0.1:9
            auth:
              token_url: http://127.0.0.1:9/token
              device_authorization_url: http://127.0.0.1:9/device
              client_id: app
              client_secret_file: \(secret)
            store:
              path: \(self.store)
              key_file: store.key
            admin:
              socket: \(self.directory.path)/admin.sock
            """,
            to: "b.yaml"
        )
    }

    /// Runs `bearerd arguments`; one still running after `limit` is let out of the FIFO and
    /// reported as `blocked`.
    func run(
        _ arguments: [String],
        limit: Duration = .seconds(5)
    ) async throws -> (
        status: Int32, stderr: String, blocked: Bool
    ) {
        let process = try BearerdProcess(arguments + ["-c", self.config])
        do {
            let status = try await process.wait(limit: limit)
            return (status, process.stderr + process.stdout, false)
        } catch {
            // Stopped by wait(limit:); the FIFO is opened too, in case the signal waits on it.
            let writer = open(self.store, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
            if writer >= 0 { close(writer) }
            return (try await process.wait(), process.stderr + process.stdout, true)
        }
    }

    @Test(arguments: [["status"], ["token"], ["logout"], ["check-config"]])
    func aCommandOnAFIFOStoreFailsAtOnceNamingIt(arguments: [String]) async throws {
        try SpecialFile.fifo.make(at: self.store)
        let result = try await self.run(arguments)
        #expect(!result.blocked, "bearerd \(arguments) waited in open() on the FIFO")
        #expect(result.status != 0)
        #expect(result.stderr.contains("\(self.store) is a FIFO, not a regular file: remove it"), "\(result.stderr)")
        // Nothing was left holding the store's lock: with the FIFO gone, the next command works.
        unlink(self.store)
        let after = try await self.run(["status"])
        #expect(after.status == 3 && after.stderr.contains("logged out"), "\(after.stderr)")
    }

    /// `auth.ca_file` is read when the token client is made, so a FIFO there fails that at once
    /// instead of a TLS handshake that waits on an event loop for ever.
    @Test func aCAFileThatIsAFIFOIsRefusedWhenTheClientIsMade() async throws {
        let ca = self.directory.path + "/ca.pem"
        try SpecialFile.fifo.make(at: ca)
        let (message, jammed) = try await withoutBlocking(on: [ca]) { () -> String? in
            do {
                let clients = try TokenClients(
                    caFile: ca,
                    certificate: nil,
                    connectTimeout: .seconds(1),
                    logger: Logger(label: "test")
                )
                try? clients.current().client.syncShutdown()
                return nil
            } catch {
                return "\(error)"
            }
        }
        #expect(!jammed, "making the token client waited in open()")
        #expect(message?.contains("auth.ca_file: \(ca) is a FIFO, not a regular file: remove it") == true)
    }
}
