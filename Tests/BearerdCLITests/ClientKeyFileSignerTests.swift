import BearerdTestSupport
import Foundation
import InMemoryLogging
import Logging
import Testing

@testable import BearerdCLI

/// `auth.client_key_file` is read again before each assertion; what it cannot use is said once,
/// and the key it held signs meanwhile.
@Suite("A client key file replaced while bearerd runs")
struct ClientKeyFileSignerTests {
    @Test func whatCannotBeUsedIsSaidOnceAndTheNewKeySignsWhenItComes() async throws {
        let directory = try TemporaryDirectory()
        let first = try String(
            contentsOfFile: try TestKeys.shared("ec", named: "rotating-a").privateKey,
            encoding: .utf8
        )
        let second = try String(
            contentsOfFile: try TestKeys.shared("ec", named: "rotating-b").privateKey,
            encoding: .utf8
        )
        let path = try directory.write(first, to: "client.key", mode: 0o600)
        let logs = InMemoryLogHandler()
        let signer = try ClientKeyFileSigner(
            path: path,
            algorithm: nil,
            keyID: nil,
            logger: Logger(label: "test") { _ in logs },
            read: { try TokenPlan.readFile($0, key: "auth.client_key_file") }
        )
        func sign() async throws { _ = try await signer.assertion(clientID: "app", audience: "https://auth.example") }
        func said(_ level: Logger.Level) -> Int { logs.entries.filter { $0.level == level }.count }

        try await sign()
        #expect(logs.entries.isEmpty)
        // Half written: the previous key signs, and it is said once for this content.
        let half = String(first.prefix(60))
        _ = try directory.write(half, to: "client.key", mode: 0o600)
        for _ in 0..<3 { try await sign() }
        #expect(said(.warning) == 1, "\(logs.entries)")
        // Gone for a moment (removed, then written anew): said once more, not per assertion.
        try FileManager.default.removeItem(atPath: path)
        for _ in 0..<3 { try await sign() }
        #expect(said(.warning) == 2, "\(logs.entries)")
        // The new key: used from the next assertion, said once.
        _ = try directory.write(second, to: "client.key", mode: 0o600)
        for _ in 0..<3 { try await sign() }
        #expect(said(.notice) == 1, "\(logs.entries)")
        #expect(said(.warning) == 2)
        // Never the file's content.
        let text = logs.entries.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        for line in (first + second).split(separator: "\n") where !line.hasPrefix("-----") {
            #expect(!text.contains(line), "a line of the key file is in the log")
        }
    }
}
