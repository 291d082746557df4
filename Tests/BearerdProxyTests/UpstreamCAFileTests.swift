import BearerdConfig
import BearerdProxy
import BearerdTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// `upstream.ca_file` is read through a checked directory like every other file bearerd opens
/// (issue 35): a FIFO in its place is an error naming it, never a start that waits for ever.
@Suite("upstream.ca_file")
struct UpstreamCAFileTests {
    @Test func aCAFileThatIsAFIFOIsRefusedAtOnce() async throws {
        let directory = try TemporaryDirectory()
        try directory.write("tok-123", to: "token")
        let fifo = directory.path + "/ca.pem"
        try SpecialFile.fifo.make(at: fifo)
        let yaml = """
            upstream:
              url: https://api.example.com/v2
              ca_file: \(fifo)
            auth:
              static_token_file: \(directory.path)/token
            """
        let config = try ConfigLoader(environment: [:]).load(yaml: yaml, source: "t", baseDirectory: directory.path)
        let (message, jammed) = try await withoutBlocking(on: [fifo]) { () -> String in
            do {
                _ = try ProxySettings(configuration: config)
                return "accepted"
            } catch {
                return "\(error)"
            }
        }
        #expect(!jammed, "reading upstream.ca_file blocked on a FIFO")
        #expect(message.contains("upstream.ca_file") && message.contains("FIFO"), "\(message)")
    }
}
