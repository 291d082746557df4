import BearerdStore
import Testing

@testable import BearerdCLI

@Suite("check-config of a config with sessions: each finding said once, of whom it concerns")
struct CheckConfigSessionsTests {
    @Test func aFindingOfEverySessionIsSaidOnceAndAnotherAsItsSessions() {
        var alpha = StoreCheck.Findings()
        alpha.errors = ["admin.socket: held by pid 7", "store.path: cannot be read"]
        alpha.notes = ["store.path: does not exist yet"]
        var beta = StoreCheck.Findings()
        beta.errors = ["admin.socket: held by pid 7"]
        beta.notes = ["store.path: does not exist yet"]
        let merged = CheckConfigCommand.merged([("alpha", alpha), ("beta", beta)], named: true)
        #expect(merged.errors == ["admin.socket: held by pid 7", "session alpha: store.path: cannot be read"])
        #expect(merged.notes == ["store.path: does not exist yet"])
        // A config without sessions: says them as before.
        #expect(CheckConfigCommand.merged([("default", alpha)], named: false).errors == alpha.errors)
    }
}
