import BearerdTokens
import Foundation

/// `JWTClaims` on a whole token (first byte even) or on a payload wrapped into a token (odd), so
/// that mutations reach the JSON decoder and not only the base64url one.
enum JWTTarget {
    static func run(_ bytes: [UInt8]) -> String {
        guard let mode = bytes.first else { return "empty" }
        let rest = bytes.dropFirst()
        let token: String
        if mode & 1 == 0 {
            token = String(decoding: rest, as: UTF8.self)
        } else {
            let payload = Data(rest).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            token = "eyJhbGciOiJub25lIn0.\(payload).c2ln"
        }
        let expiry = JWTClaims.expiry(of: token)
        if let expiry { promise(expiry.isFinite && expiry > 0, "an expiry is a positive finite number") }
        let subject = JWTClaims.subject(of: token)
        if let subject {
            promise(!subject.isEmpty && subject.utf8.count <= 256, "a subject is 1 to 256 bytes")
            promise(
                subject.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F },
                "a subject has no control characters"
            )
        }
        return [expiry == nil ? nil : "exp", subject == nil ? nil : "sub"].compactMap { $0 }.joined(separator: " ")
    }
}
