import BearerdConfig
import BearerdTestSupport
import Configuration
import Foundation
import Synchronization
import Testing

/// Every key ``ConfigLoader`` read, from swift-configuration's access reporting.
final class ReadKeys: AccessReporter, Sendable {
    private let keys = Mutex<Set<String>>([])

    func report(_ event: AccessEvent) {
        let key = event.metadata.key.components.joined(separator: ".")
        self.keys.withLock { _ = $0.insert(key) }
    }

    var all: Set<String> { self.keys.withLock { $0 } }
}

@Suite("every declared key is read")
struct DeclaredKeysAreReadTests {
    /// Over the three token sources and the two stores, the builder reads every key the schema
    /// declares: a key declared (so accepted in a file) but never read would be silently ignored.
    @Test func everyDeclaredKeyIsRead() throws {
        let directory = try TemporaryDirectory()
        let read = ReadKeys()
        for yaml in try ConfigSamples.everySourceAndStore(in: directory) {
            _ = try ConfigLoader(environment: [:], accessReporter: read)
                .load(yaml: yaml, source: "test.yaml", baseDirectory: directory.path)
        }
        let declared = Set(ConfigLoader.knownKeys)
        #expect(declared.subtracting(read.all).sorted() == [], "declared, never read")
        #expect(read.all.subtracting(declared).sorted() == [], "read, never declared (a typo in the builder)")
    }
}
