import Foundation
import Testing

@testable import BearerdProxy

@Suite("The shared client key")
struct ClientKeyTests {
    @Test func onlyTheExactKeyMatchesWhateverItsLength() throws {
        let directory = try BearerdTestSupportShim.directory()
        let key = "shared-key-0123456789abcdef"
        let file = directory + "/client-key"
        try (key + "\n").write(toFile: file, atomically: true, encoding: .utf8)
        let clientKey = try ClientKey(file: file, header: "X-Bearerd-Key")
        #expect(clientKey.matches(key))
        for wrong in [
            "", String(key.dropLast()), key + "x", key + String(repeating: "\0", count: 256),
            key + String(repeating: "j", count: 256), key + String(repeating: "j", count: 512),
        ] {
            #expect(!clientKey.matches(wrong), "matched a key of \(wrong.utf8.count) bytes")
        }
        #expect(!"\(clientKey)".contains(key))
    }
}
