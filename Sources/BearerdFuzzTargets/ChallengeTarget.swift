import BearerdAuth

/// `ScopeChallenge.parse` on a `WWW-Authenticate` value (the bytes as given, split into field
/// values at newlines). Its promises: what it reads is an RFC 6749 scope-token list (distinct,
/// bounded, printable ASCII without `"` or `\`), an RFC 9470 ask has something to ask, and the
/// challenge written back reads the same.
enum ChallengeTarget {
    static func run(_ bytes: [UInt8]) -> String {
        let values = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        guard let challenge = ScopeChallenge.parse(values) else { return "none" }
        for list in [challenge.scopes, challenge.acrValues] {
            promise(list.count <= 64 && Set(list).count == list.count, "at most 64 distinct tokens")
            for token in list {
                promise(ScopeChallenge.isScopeToken(token), "each token is 1...256 NQCHARs")
            }
        }
        if let maxAge = challenge.maxAge { promise(maxAge >= 0 && maxAge <= 9_999_999_999, "max_age is bounded") }
        if challenge.kind == .insufficientUserAuthentication {
            promise(!challenge.acrValues.isEmpty || challenge.maxAge != nil, "an RFC 9470 ask asks for something")
        }
        var written = #"Bearer error="\#(challenge.kind.rawValue)""#
        if !challenge.scopes.isEmpty { written += #", scope="\#(challenge.scopes.joined(separator: " "))""# }
        if !challenge.acrValues.isEmpty { written += #", acr_values="\#(challenge.acrValues.joined(separator: " "))""# }
        if let maxAge = challenge.maxAge { written += ", max_age=\(maxAge)" }
        promise(ScopeChallenge.parse([written]) == challenge, "the challenge written back reads the same")
        return challenge.kind.rawValue
    }
}
