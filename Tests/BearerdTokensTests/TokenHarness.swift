import BearerdAuth
import BearerdTestSupport
import Foundation
import InMemoryLogging
import Logging

@testable import BearerdTokens

/// A token manager on a manual clock in front of a fake token endpoint.
struct TokenHarness {
    let clock: ManualTokenClock
    let clocks = ManualClockSource()
    let endpoint: FakeTokenEndpoint
    let store: MemoryTokenStore
    let logs = InMemoryLogHandler()
    let manager: TokenManager

    static let source = OAuth2Source(
        settings: .init(
            endpoint: .tokenURL("https://auth.example/token"),
            clientID: "app",
            clientSecret: Secret("client-secret-value-0042")
        )
    )

    init(
        clock: ManualTokenClock = ManualTokenClock(),
        source: any TokenSource = Self.source,
        stored: StoredTokens? = nil,
        seed: String? = "seed-refresh-token-0001",
        policy: RefreshPolicy = RefreshPolicy(),
        random: Double = 0.5,
        verifier: (any TokenVerifier)? = nil,
        respond: @escaping FakeTokenEndpoint.Respond
    ) {
        self.clock = clock
        self.endpoint = FakeTokenEndpoint(respond)
        self.store = MemoryTokenStore(stored)
        var handler = self.logs
        handler.logLevel = .trace
        let captured = handler
        self.manager = TokenManager(
            source: source,
            transport: self.endpoint,
            store: self.store,
            seed: seed.map(Secret.init),
            policy: policy,
            clock: self.clock,
            clocks: self.clocks,
            logger: Logger(label: "tokens-test") { _ in captured },
            verifier: verifier,
            random: { random }
        )
    }

    var logText: String {
        self.logs.entries.map { "\($0.level) \($0.message) \($0.metadata)" }.joined(separator: "\n")
    }

    /// Seconds since the clock's start, for readable expectations.
    func offset(_ date: Date?) -> Double? {
        date.map { $0.timeIntervalSince(Date(timeIntervalSince1970: 1_800_000_000)) }
    }
}

/// A JWT with the given payload (unsigned: bearerd never checks signatures).
func jwt(_ payload: String, padded: Bool = false) -> String {
    func encode(_ text: String) -> String {
        var base64 = Data(text.utf8).base64EncodedString()
        base64 = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        return padded ? base64 : base64.replacingOccurrences(of: "=", with: "")
    }
    return encode(#"{"alg":"RS256","typ":"JWT"}"#) + "." + encode(payload) + ".c2lnbmF0dXJl"
}
