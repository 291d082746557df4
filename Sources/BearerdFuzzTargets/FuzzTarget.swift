/// The fuzz targets: each takes any bytes, runs one of bearerd's parsers of untrusted input on
/// them, and traps (which libFuzzer reports as a crash, with the input) when the parser breaks
/// one of its promises. Returning normally means the input was handled, as an error or not.
///
/// `scripts/fuzz TARGET SECONDS` runs one under libFuzzer with AddressSanitizer; the test suite
/// runs every committed seed and regression input through them without.
package enum FuzzTarget: String, CaseIterable, Sendable {
    /// The JWT payload decoder (`exp`, `sub`).
    case jwt
    /// Token endpoint answers: OAuth 2.0 JSON, error bodies, the custom JSON mapping.
    case tokenResponse = "token-response"
    /// The config loader: YAML and environment overrides.
    case config
    /// The store file reader: the header, and the decrypted payload.
    case store
    /// The request-target canonicaliser that the path lists and the forwarded target share.
    case target
    /// The data path's parser of upstream responses, upgrades included.
    case response
    /// The data path's parser of client requests, against llhttp on the same bytes.
    case request
    /// The reader of a 403's `WWW-Authenticate` challenges (insufficient_scope, RFC 9470).
    case challenge

    /// Runs the target on one input; says how the input was taken (`issued`, `refused`…), so
    /// that a seed can be checked to reach what it was written for.
    @discardableResult
    package func run(_ bytes: [UInt8]) -> String {
        switch self {
        case .jwt: JWTTarget.run(bytes)
        case .tokenResponse: TokenResponseTarget.run(bytes)
        case .config: ConfigTarget.run(bytes)
        case .store: StoreTarget.run(bytes)
        case .target: TargetTarget.run(bytes)
        case .response: ResponseTarget.run(bytes)
        case .request: RequestTarget.run(bytes)
        case .challenge: ChallengeTarget.run(bytes)
        }
    }
}

/// A broken promise: traps with what was broken (never with the input, which may hold tokens).
func promise(_ condition: @autoclosure () -> Bool, _ what: StaticString) {
    if !condition() { fatalError("broken promise: \(what)") }
}
