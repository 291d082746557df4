import BearerdAuth
import Foundation

/// What a token endpoint issued.
package struct IssuedTokens: Sendable {
    package var accessToken: BearerToken
    /// A new refresh token, when the server sent one (rotation); `nil` keeps the old one.
    package var refreshToken: Secret?
    /// `expires_in`: lifetime counted from when the response arrived.
    package var lifetime: Duration?
    /// An absolute expiry the response gave (custom JSON APIs' `expiresAt`).
    package var expiresAt: Date?
    /// The scope granted, when the response named it (RFC 6749 §5.1 `scope`).
    package var scope: String?

    package init(
        accessToken: BearerToken,
        refreshToken: Secret?,
        lifetime: Duration?,
        expiresAt: Date? = nil,
        scope: String? = nil
    ) {
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.lifetime = lifetime
        self.expiresAt = expiresAt
        self.scope = scope
    }
}

/// How a token endpoint's answer is taken.
package enum TokenOutcome: Sendable {
    case issued(IssuedTokens, serverDate: Date?)
    /// A 4xx other than 408 and 429: the credentials sent are no good. The only outcome that
    /// wipes stored tokens.
    /// `error` is RFC 6749 §5.2's code, `description` its `error_description`, bounded and with
    /// anything that could be a credential taken out (``TokenResponseClassifier/errorDescription(_:)``).
    case rejected(status: Int, error: String?, description: String? = nil)
    /// 5xx, 408, 429, a network error or a timeout: keep everything and retry later.
    case unavailable(reason: String, retryAfter: Duration?)
    /// A 2xx bearerd cannot read, or a request the source cannot make for a reason of the
    /// configuration (discovery found no metadata): refreshes keep everything and retry later,
    /// like ``unavailable(reason:retryAfter:)``; a login fails, naming what is missing.
    case unreadable(reason: String)
    /// No answer at all: the token server could not be reached (refused, no route, DNS, a
    /// timeout). Taken as ``unavailable(reason:retryAfter:)``, except just after a wake, when it
    /// is the network coming back and counts for nothing.
    case unreachable(reason: String)
}

/// Sorts a token endpoint's answer into a ``TokenOutcome`` (RFC 6749 §5.1, §5.2), whatever the
/// body of an error looks like: RFC 6749 JSON, other JSON, text, or nothing.
package enum TokenResponseClassifier {
    package static func classify(
        _ response: TokenHTTPResponse,
        now: Date,
        parse: ([UInt8]) throws -> IssuedTokens
    ) -> TokenOutcome {
        switch response.status {
        case 200..<300:
            do {
                return .issued(try parse(response.body), serverDate: response.header("date").flatMap(HTTPDate.parse))
            } catch {
                return .unreadable(
                    reason: "the token endpoint answered \(response.status) with a body bearerd cannot read: \(error)"
                )
            }
        case 408, 429:
            return .unavailable(
                reason: "the token endpoint answered \(response.status)",
                retryAfter: response.header("retry-after").flatMap { HTTPDate.retryAfter($0, now: now) }
            )
        case 300..<400:
            return .unavailable(
                reason:
                    "the token endpoint redirected (\(response.status)); bearerd does not follow redirects: set its final address in the config",
                retryAfter: nil
            )
        case 400..<500:
            let error = Self.errorCode(response.body)
            switch error {
            case "use_dpop_nonce":
                // Asked again after the one retry with its nonce: a server problem, not the credentials.
                return .unavailable(
                    reason: "the token endpoint asked for a new DPoP nonce again after a retry with its last one",
                    retryAfter: nil
                )
            case "invalid_dpop_proof":
                // Most often this machine's clock (the proof's iat): keep the session.
                return .unavailable(
                    reason:
                        "the token endpoint refused bearerd's DPoP proof (invalid_dpop_proof): check this machine's clock, and that the server accepts ES256 proofs",
                    retryAfter: nil
                )
            default:
                return .rejected(
                    status: response.status,
                    error: error,
                    description: Self.errorDescription(response.body)
                )
            }
        default:
            return .unavailable(
                reason: "the token endpoint answered \(response.status)",
                retryAfter: response.header("retry-after").flatMap { HTTPDate.retryAfter($0, now: now) }
            )
        }
    }

    /// RFC 6749 §5.2 `error_description`, for a person to read beside the code: at most 200
    /// characters of it, characters outside the RFC's set (printable ASCII but `"` and `\\`) shown
    /// as `?`, and every run of 20 or more token characters (a JWT, an opaque token, a code a
    /// server repeats) shown as `…`, so no credential reaches a log line or a message.
    static func errorDescription(_ body: [UInt8]) -> String? {
        guard let text = JSONValue.parse(body)?["error_description"]?.stringValue, !text.isEmpty else {
            return nil
        }
        return Self.redacted(text, limit: 200)
    }

    /// At most `limit` characters of `text`, each outside printable ASCII (and `"`, `\\`) as `?`,
    /// each run of 20 or more token characters as `…`.
    package static func redacted(_ text: String, limit: Int) -> String {
        var shown = ""
        var run = ""
        func endRun() {
            shown += run.count >= 20 ? "…" : run
            run = ""
        }
        for scalar in text.unicodeScalars.prefix(limit) {
            let isTokenCharacter =
                (scalar.value >= 0x30 && scalar.value <= 0x39) || (scalar.value >= 0x41 && scalar.value <= 0x5A)
                || (scalar.value >= 0x61 && scalar.value <= 0x7A) || "-._~+/=".unicodeScalars.contains(scalar)
            if isTokenCharacter {
                run.unicodeScalars.append(scalar)
                continue
            }
            endRun()
            let allowed = scalar.value >= 0x20 && scalar.value <= 0x7E && scalar != "\"" && scalar != "\\"
            shown += allowed ? String(scalar) : "?"
        }
        endRun()
        return shown + (text.unicodeScalars.count > limit ? "…" : "")
    }

    /// RFC 6749 §5.2 `error`, when the body is a JSON object with a string `error` made of the
    /// characters the RFC allows (anything else is not repeated into logs).
    static func errorCode(_ body: [UInt8]) -> String? {
        guard let error = JSONValue.parse(body)?["error"]?.stringValue, !error.isEmpty, error.utf8.count <= 64,
            error.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value <= 0x7E && $0 != "\"" && $0 != "\\" })
        else { return nil }
        return error
    }
}
