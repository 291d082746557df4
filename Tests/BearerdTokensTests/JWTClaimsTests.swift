import Foundation
import Testing

@testable import BearerdTokens

@Suite("JWT expiry")
struct JWTClaimsTests {
    @Test(arguments: [
        (jwt(#"{"exp":1800000600}"#), 1_800_000_600.0),
        (jwt(#"{"exp":1800000600}"#, padded: true), 1_800_000_600.0),
        (jwt(#"{"exp":1800000600.5,"sub":"x"}"#), 1_800_000_600.5),
        // `?>` and `??` encode to base64 with `+`/`/`, so base64url has `-`/`_`.
        (jwt(#"{"sub":"?>??>","exp":1800000600}"#), 1_800_000_600.0),
    ])
    func expIsRead(token: String, expected: Double) {
        #expect(JWTClaims.expiry(of: token) == expected)
    }

    @Test(arguments: [
        "opaque-token-abc",
        "a.b",
        "a.b.c.d.e",
        jwt(#"{"sub":"no exp"}"#),
        jwt(#"{"exp":"1800000600"}"#),
        jwt(#"{"exp":true}"#),
        jwt(#"{"exp":-5}"#),
        jwt("not json"),
        "eyJhbGciOiJSUzI1NiJ9.%%%.sig",
        "eyJhbGciOiJSUzI1NiJ9.e.sig",
    ])
    func anythingElseIsOpaque(token: String) {
        #expect(JWTClaims.expiry(of: token) == nil)
    }

    @Test func theUrlSafeAlphabetIsDecoded() throws {
        #expect(jwt(#"{"sub":"?>??>","exp":1}"#).split(separator: ".")[1].contains { $0 == "-" || $0 == "_" })
        #expect(JWTClaims.base64URLDecoded("-_8") == Data([0xFB, 0xFF]))
        #expect(JWTClaims.base64URLDecoded("a") == nil)
    }
}
