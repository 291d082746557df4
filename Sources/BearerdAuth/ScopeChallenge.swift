/// What an API asks for when the token it got is not enough: RFC 6750 §3.1's
/// `insufficient_scope` (with the `scope` it needs) or RFC 9470's
/// `insufficient_user_authentication` (with `acr_values` and `max_age`), read from a 403's
/// `WWW-Authenticate: Bearer` (or `DPoP`) challenge.
package struct ScopeChallenge: Sendable, Equatable {
    package enum Kind: String, Sendable, Codable {
        case insufficientScope = "insufficient_scope"
        case insufficientUserAuthentication = "insufficient_user_authentication"
    }

    package var kind: Kind
    /// `scope`: the scopes the request needs (RFC 6750 §3), each an RFC 6749 scope-token;
    /// empty when the API does not say (the attribute is optional).
    package var scopes: [String]
    /// `acr_values` (RFC 9470 §3): authentication context classes, most preferred first.
    package var acrValues: [String]
    /// `max_age` (RFC 9470 §3): seconds since the person last authenticated.
    package var maxAge: Int?

    package init(kind: Kind, scopes: [String] = [], acrValues: [String] = [], maxAge: Int? = nil) {
        self.kind = kind
        self.scopes = scopes
        self.acrValues = acrValues
        self.maxAge = maxAge
    }

    /// Header values longer than this, or more parameters, or more scopes than these, are not
    /// read: a challenge is a few dozen bytes.
    static let maxValueBytes = 8192
    static let maxParameters = 32
    static let maxScopes = 64
    static let maxScopeBytes = 256

    /// The first Bearer or DPoP challenge among `values` (each a `WWW-Authenticate` field value)
    /// that asks for more; `nil` when none does or a value cannot be read.
    package static func parse(_ values: [String]) -> ScopeChallenge? {
        for value in values {
            guard value.utf8.count <= Self.maxValueBytes else { continue }
            var parser = ChallengeParser(Array(value.utf8))
            guard let challenges = parser.challenges() else { continue }
            for (scheme, parameters) in challenges where scheme == "bearer" || scheme == "dpop" {
                if let challenge = Self.challenge(parameters) { return challenge }
            }
        }
        return nil
    }

    private static func challenge(_ parameters: [(String, String)]) -> ScopeChallenge? {
        var fields: [String: String] = [:]
        for (name, value) in parameters {
            // A parameter given twice is ambiguous (RFC 7235 §2.1 says each appears once).
            guard fields[name] == nil else { return nil }
            fields[name] = value
        }
        guard let error = fields["error"], let kind = Kind(rawValue: error) else { return nil }
        guard let scopes = Self.tokens(fields["scope"] ?? ""),
            let acrValues = Self.tokens(fields["acr_values"] ?? "")
        else { return nil }
        var maxAge: Int?
        if let text = fields["max_age"] {
            guard !text.isEmpty, text.utf8.count <= 10, text.utf8.allSatisfy({ (48...57).contains($0) }),
                let value = Int(text)
            else { return nil }
            maxAge = value
        }
        if kind == .insufficientUserAuthentication && acrValues.isEmpty && maxAge == nil { return nil }
        return ScopeChallenge(kind: kind, scopes: scopes, acrValues: acrValues, maxAge: maxAge)
    }

    /// Whether `token` is one RFC 6749 §3.3 scope-token: NQCHARs (%x21 / %x23-5B / %x5D-7E),
    /// 1 to 256 bytes.
    package static func isScopeToken(_ token: some StringProtocol) -> Bool {
        !token.isEmpty && token.utf8.count <= Self.maxScopeBytes
            && token.utf8.allSatisfy { $0 == 0x21 || (0x23...0x5B).contains($0) || (0x5D...0x7E).contains($0) }
    }

    /// Space-separated RFC 6749 §3.3 scope-tokens (NQCHAR: %x21 / %x23-5B / %x5D-7E); `nil` when
    /// one is not, or there are too many.
    static func tokens(_ text: String) -> [String]? {
        var result: [String] = []
        for token in text.split(separator: " ", omittingEmptySubsequences: true) {
            guard Self.isScopeToken(token), result.count < Self.maxScopes else { return nil }
            if !result.contains(String(token)) { result.append(String(token)) }
        }
        return result
    }
}

/// RFC 7235 §4.1's `WWW-Authenticate` field, read strictly.
package enum WWWAuthenticate {
    /// The value's challenges: each lowercased scheme with its parameters (names lowercased);
    /// `nil` when the value does not follow the grammar or is too long.
    package static func challenges(_ value: String) -> [(scheme: String, parameters: [(String, String)])]? {
        guard value.utf8.count <= ScopeChallenge.maxValueBytes else { return nil }
        var parser = ChallengeParser(Array(value.utf8))
        return parser.challenges()?.map { (scheme: $0.0, parameters: $0.1) }
    }
}

/// RFC 7235 §4.1's `WWW-Authenticate` grammar, strictly: `1#challenge`, each a scheme and
/// `auth-param`s (`token68` is read and ignored). Bytes, not characters.
private struct ChallengeParser {
    let bytes: [UInt8]
    var index = 0

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// Every challenge as its lowercased scheme and its parameters (names lowercased); `nil`
    /// when the value does not follow the grammar.
    mutating func challenges() -> [(String, [(String, String)])]? {
        var result: [(String, [(String, String)])] = []
        var parameters = 0
        self.skipSeparators()
        while self.index < self.bytes.count {
            guard let scheme = self.token() else { return nil }
            var params: [(String, String)] = []
            self.skipSpaces()
            // After the scheme: parameters, a token68, or the next challenge.
            while self.index < self.bytes.count {
                let mark = self.index
                guard let name = self.token() else {
                    if self.bytes[self.index] == UInt8(ascii: ",") {
                        self.index += 1
                        self.skipSpaces()
                        continue
                    }
                    return nil
                }
                self.skipSpaces()
                guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "=") else {
                    // A token not followed by "=": the next challenge's scheme (or a token68).
                    self.index = mark
                    break
                }
                self.index += 1
                self.skipSpaces()
                // token68 ends in "=" padding: "abc==" reads as name "abc" and an empty value.
                guard let value = self.quoted() ?? self.token() else {
                    if self.index >= self.bytes.count || self.bytes[self.index] == UInt8(ascii: ",")
                        || self.bytes[self.index] == UInt8(ascii: "=")
                    {
                        while self.index < self.bytes.count && self.bytes[self.index] == UInt8(ascii: "=") {
                            self.index += 1
                        }
                        self.skipSpaces()
                        continue
                    }
                    return nil
                }
                parameters += 1
                guard parameters <= ScopeChallenge.maxParameters else { return nil }
                params.append((name.lowercased(), value))
                self.skipSpaces()
                if self.index < self.bytes.count {
                    guard self.bytes[self.index] == UInt8(ascii: ",") else { return nil }
                    self.index += 1
                    self.skipSpaces()
                }
            }
            result.append((scheme.lowercased(), params))
            self.skipSeparators()
        }
        return result
    }

    private mutating func skipSpaces() {
        while self.index < self.bytes.count && (self.bytes[self.index] == 0x20 || self.bytes[self.index] == 0x09) {
            self.index += 1
        }
    }

    private mutating func skipSeparators() {
        while self.index < self.bytes.count
            && (self.bytes[self.index] == 0x20 || self.bytes[self.index] == 0x09
                || self.bytes[self.index] == UInt8(ascii: ","))
        {
            self.index += 1
        }
    }

    /// RFC 7230 `tchar`s.
    private mutating func token() -> String? {
        let start = self.index
        while self.index < self.bytes.count && Self.isTokenCharacter(self.bytes[self.index]) { self.index += 1 }
        guard self.index > start else { return nil }
        return String(decoding: self.bytes[start..<self.index], as: UTF8.self)
    }

    /// A quoted-string, unescaped; `nil` (and nothing read) when there is none here, or it is
    /// unterminated or holds a control character.
    private mutating func quoted() -> String? {
        guard self.index < self.bytes.count, self.bytes[self.index] == UInt8(ascii: "\"") else { return nil }
        var position = self.index + 1
        var out: [UInt8] = []
        while position < self.bytes.count {
            let byte = self.bytes[position]
            if byte == UInt8(ascii: "\"") {
                self.index = position + 1
                return String(decoding: out, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                position += 1
                guard position < self.bytes.count else { return nil }
            }
            let value = self.bytes[position]
            guard value == 0x09 || (value >= 0x20 && value != 0x7F) else { return nil }
            out.append(value)
            position += 1
        }
        return nil
    }

    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
