import BearerdFuzzTargets
import Foundation
import Testing

/// Every committed fuzz input, run through its target without libFuzzer: the seeds still reach
/// what they were written for, and every input that once broke a promise stays fixed.
@Suite("Fuzz seeds and regressions")
struct FuzzCorpusTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("fuzz")

    static func inputs(_ kind: String, _ target: FuzzTarget) -> [URL] {
        let folder = Self.root.appendingPathComponent(kind).appendingPathComponent(target.rawValue)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().map { folder.appendingPathComponent($0) }
    }

    @Test(arguments: FuzzTarget.allCases)
    func seedsAreHandled(target: FuzzTarget) throws {
        let seeds = Self.inputs("corpus", target)
        #expect(seeds.count >= 5, "\(target.rawValue) needs a seed corpus in fuzz/corpus/\(target.rawValue)")
        for seed in seeds { target.run([UInt8](try Data(contentsOf: seed))) }
    }

    @Test(arguments: FuzzTarget.allCases)
    func regressionsStayFixed(target: FuzzTarget) throws {
        for input in Self.inputs("regressions", target) { target.run([UInt8](try Data(contentsOf: input))) }
    }

    /// Seeds that must reach deep: past the parsers into what a good input gives.
    @Test(
        arguments: [
            (FuzzTarget.jwt, "token-exp-sub", "exp sub"), (.jwt, "payload-exp-sub", "exp sub"),
            (.tokenResponse, "oauth2-full", "issued"), (.tokenResponse, "json-default", "issued"),
            (.tokenResponse, "json-custom", "issued"),
            (.tokenResponse, "error-invalid-grant", "rejected invalid_grant"),
            (.config, "oauth2-memory-store", "loaded"), (.config, "json-source", "loaded"),
            (.store, "file-valid", "read"), (.store, "file-wrong-key", "wrong key"),
            (.store, "payload-sessions", "decoded"), (.target, "plain", "accepted"), (.target, "params", "accepted"),
            (.target, "encoded-dots", "refused"), (.response, "chunked", "ended"),
            (.response, "switching", "switched"), (.response, "switching-bare", "switch refused"),
            (.response, "upgrade-refused", "ended"),
            (.response, "continue-204", "ended"), (.request, "pipelined-length", "ended"),
            (.request, "chunked", "ended"), (.request, "smuggle-cl-te", "refused"), (.request, "upgrade", "ended"),
            (.challenge, "rfc6750-scope", "insufficient_scope"), (.challenge, "dot", "insufficient_scope"),
            (.challenge, "rfc9470-acr", "insufficient_user_authentication"), (.challenge, "invalid-token", "none"),
        ]
    )
    func seedReachesItsPath(target: FuzzTarget, seed: String, outcome: String) throws {
        let file = Self.root.appendingPathComponent("corpus/\(target.rawValue)/\(seed)")
        #expect(target.run([UInt8](try Data(contentsOf: file))) == outcome)
    }
}
