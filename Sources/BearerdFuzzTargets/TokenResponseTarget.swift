import BearerdAuth
import BearerdConfig
import BearerdTokens
import Foundation

/// A token endpoint's answer, classified as the engine classifies it. Byte 0 picks the status,
/// byte 1 the parser (OAuth 2.0, the default custom JSON mapping, one with `expires_in` and
/// `expires_at` pointers elsewhere); what comes before a NUL after them is a `Retry-After` and
/// `Date` value, and the rest the body.
enum TokenResponseTarget {
    static let statuses = [200, 201, 204, 302, 400, 401, 403, 408, 429, 500, 503]

    static let sources: [any TokenSource] = [
        OAuth2Source(settings: .init(endpoint: .tokenURL("http://127.0.0.1:9/token"), clientID: "fuzz")),
        JSONSource(settings: .init(refreshURL: "http://127.0.0.1:9/refresh")),
        JSONSource(
            settings: .init(
                refreshURL: "http://127.0.0.1:9/refresh",
                accessTokenPointer: "/data/0/access",
                refreshTokenPointer: "/data/0/refresh",
                expiresInPointer: "/data/0/ttl",
                expiresAtPointer: "/data/0/until"
            )
        ),
    ]

    static func run(_ bytes: [UInt8]) -> String {
        guard bytes.count >= 2 else { return "short" }
        let status = Self.statuses[Int(bytes[0]) % Self.statuses.count]
        let source = Self.sources[Int(bytes[1]) % Self.sources.count]
        let rest = bytes.dropFirst(2)
        var value = ""
        var body = Array(rest)
        if let nul = rest.firstIndex(of: 0) {
            value = String(decoding: rest[..<nul], as: UTF8.self)
            body = Array(rest[(nul + 1)...])
        }
        let response = TokenHTTPResponse(
            status: status,
            headers: [("retry-after", value), ("date", value)],
            body: body
        )
        let outcome = TokenResponseClassifier.classify(response, now: Date(timeIntervalSince1970: 1_800_000_000)) {
            try source.parseIssued($0)
        }
        switch outcome {
        case .issued(let tokens, _):
            promise(
                BearerToken.isValidTokenValue(tokens.accessToken.value),
                "an issued access token is a valid b64token"
            )
            promise(tokens.refreshToken.map { !$0.value.isEmpty } ?? true, "an issued refresh token is not empty")
            if let lifetime = tokens.lifetime { promise(lifetime >= .zero, "a lifetime is not negative") }
            if let scope = tokens.scope {
                promise(!scope.isEmpty && scope.utf8.count <= 1024, "a scope is 1 to 1024 bytes")
            }
            return "issued"
        case .rejected(let status, let error, let description):
            promise((400..<500).contains(status), "only a 4xx rejects")
            if let description {
                promise(
                    description.count <= 201
                        && description.unicodeScalars.allSatisfy {
                            ($0.value >= 0x20 && $0.value <= 0x7E && $0 != "\"" && $0 != "\\") || $0 == "…"
                        },
                    "an error description is at most 200 printable characters, without quotes or backslashes"
                )
                let runs = description.split { !($0.isASCII && ($0.isLetter || $0.isNumber || "-._~+/=".contains($0))) }
                promise(runs.allSatisfy { $0.count < 20 }, "no run of 20 token characters (a credential) is shown")
            }
            if let error {
                promise(
                    error.utf8.count <= 64 && error.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value <= 0x7E },
                    "an error code is printable ASCII, at most 64 bytes"
                )
            }
            return "rejected \(error ?? "-")"
        case .unreadable(let reason):
            promise((200..<300).contains(status), "only a 2xx is unreadable")
            for secret in Self.strings(in: body) where Self.looksLikeAToken(secret) {
                promise(!reason.contains(secret), "an error message repeats a string from the body")
            }
            return "unavailable"
        case .unreachable:
            promise(false, "an answer is never classified as no answer")
            return "unreachable"
        case .unavailable(let reason, let retryAfter):
            promise(!(200..<300).contains(status), "a 2xx is never merely unavailable")
            if let retryAfter { promise(retryAfter >= .zero, "a retry delay is not negative") }
            // An error message never repeats a token the body held. Token-like strings only: the
            // messages do name keys and pointers ("no access_token", "/data/0/access"), and a body
            // may hold those names as values too.
            for secret in Self.strings(in: body) where Self.looksLikeAToken(secret) {
                promise(!reason.contains(secret), "an error message repeats a string from the body")
            }
            return retryAfter == nil ? "unavailable" : "unavailable, retry later"
        }
    }

    static let vocabulary = [
        "access_token", "refresh_token", "token_type", "expires_in", "/session/token", "/session/refreshToken",
        "/session/expiresAt", "/data/0/access", "/data/0/refresh", "/data/0/ttl", "/data/0/until",
    ]

    /// At least 12 bytes with a letter and a digit, and not a key or pointer name.
    static func looksLikeAToken(_ text: String) -> Bool {
        text.utf8.count >= 12 && text.contains(where: \.isLetter) && text.contains(where: \.isNumber)
            && !Self.vocabulary.contains { $0.contains(text) }
    }

    /// Every string value in a JSON body, at any depth.
    static func strings(in body: [UInt8]) -> [String] {
        guard let document = JSONValue.parse(body) else { return [] }
        var found: [String] = []
        var pending = [document]
        while let value = pending.popLast() {
            switch value {
            case .string(let text): found.append(text)
            case .array(let items): pending += items
            case .object(let members): pending += members.values
            default: break
            }
        }
        return found
    }
}
