import BearerdTestSupport
import Foundation
import Testing

@testable import BearerdStore

/// `check-config` before the first start of the system unit: the default store's directory is
/// made by the unit (StateDirectory=), so its absence is a note; a store.path of the config's
/// own in a missing folder is still an error.
@Suite("check-config: a store directory that does not exist yet")
struct StoreCheckDirectoryTests {
    @Test func theUnitsOwnDirectoryIsANoteAndAnyOtherAnError() throws {
        let directory = try TemporaryDirectory()
        let key = try directory.write(String(repeating: "k", count: 32), to: "store.key", mode: 0o400)
        let missing = directory.path + "/not-yet/tokens.store"
        let service = StoreCheck.findings(path: missing, key: .keyFile(key), profile: "", createdByService: true)
        #expect(service.errors.isEmpty, "\(service.errors)")
        #expect(
            service.notes.contains { $0.contains("makes it at its first start (StateDirectory=)") },
            "\(service.notes)"
        )
        let own = StoreCheck.findings(path: missing, key: .keyFile(key), profile: "")
        #expect(own.errors.contains { $0.contains("does not exist: create it") }, "\(own.errors)")
        // The key is checked either way.
        let badKey = try directory.write("short", to: "bad.key", mode: 0o400)
        #expect(
            !StoreCheck.findings(path: missing, key: .keyFile(badKey), profile: "", createdByService: true).errors
                .isEmpty
        )
    }
}
