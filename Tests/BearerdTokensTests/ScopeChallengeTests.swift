import BearerdAuth
import Testing

/// The `WWW-Authenticate` challenges of a 403 that asks for more (RFC 6750 §3.1, RFC 9470 §3),
/// read strictly.
@Suite("What a 403 asks for")
struct ScopeChallengeTests {
    @Test(
        "challenges that ask for more",
        arguments: [
            // RFC 6750 §3's example form, with the scope named.
            (
                #"Bearer realm="example", error="insufficient_scope", error_description="needs admin", scope="admin read""#,
                ScopeChallenge(kind: .insufficientScope, scopes: ["admin", "read"])
            ),
            // django-oauth-toolkit: no space after the commas, scope last.
            (
                #"Bearer error="insufficient_scope",error_description="The access token is valid but does not have enough scope.",resource_metadata="http://127.0.0.1:9/o/.well-known/oauth-protected-resource",scope="admin""#,
                ScopeChallenge(kind: .insufficientScope, scopes: ["admin"])
            ),
            // Without the optional scope attribute: noted, nothing to ask for.
            (#"Bearer error="insufficient_scope""#, ScopeChallenge(kind: .insufficientScope)),
            // RFC 9470 §3's examples.
            (
                #"Bearer error="insufficient_user_authentication", error_description="A different authentication level is required", acr_values="myACR""#,
                ScopeChallenge(kind: .insufficientUserAuthentication, acrValues: ["myACR"])
            ),
            (
                #"Bearer error="insufficient_user_authentication", error_description="More recent authentication is required", max_age="5""#,
                ScopeChallenge(kind: .insufficientUserAuthentication, maxAge: 5)
            ),
            // Two challenges in one field, the Bearer one second; token (not quoted) values.
            (
                #"DPoP algs="ES256 PS256", Bearer error=insufficient_scope, scope=admin"#,
                ScopeChallenge(kind: .insufficientScope, scopes: ["admin"])
            ),
            (
                #"bearer ERROR="insufficient_scope", Scope="a b a""#,
                ScopeChallenge(kind: .insufficientScope, scopes: ["a", "b"])
            ),
            // A quoted-pair inside a description.
            (
                #"Bearer error_description="say \"more\"", error="insufficient_scope", scope="x""#,
                ScopeChallenge(kind: .insufficientScope, scopes: ["x"])
            ),
        ]
    )
    func asksForMore(value: String, expected: ScopeChallenge) {
        #expect(ScopeChallenge.parse([value]) == expected)
    }

    @Test(
        "challenges that do not, or cannot be read",
        arguments: [
            #"Bearer error="invalid_token""#,
            #"Basic realm="x", error="insufficient_scope", scope="admin""#,
            #"Bearer error="insufficient_scope", error="invalid_token", scope="admin""#,
            #"Bearer error="insufficient_scope", scope="admin"#,
            "Bearer error=\"insufficient_scope\", scope=\"ad\u{1}min\"",
            #"Bearer error="insufficient_scope", scope="ad\"min""#,
            #"Bearer error="insufficient_scope", scope="é""#,
            #"Bearer error="insufficient_user_authentication""#,
            #"Bearer error="insufficient_user_authentication", max_age="-1""#,
            #"Bearer error="insufficient_user_authentication", max_age="99999999999""#,
            #"Bearer error="insufficient_scope" scope="admin""#,
            "Bearer error=\"insufficient_scope\", scope=\"" + (0..<65).map { "s\($0)" }.joined(separator: " ") + "\"",
            "Bearer error=\"insufficient_scope\", scope=\"" + String(repeating: "a", count: 257) + "\"",
            "Bearer " + String(repeating: "x=\"1\", ", count: 33) + "error=\"insufficient_scope\"",
            "Bearer error=\"insufficient_scope\", d=\"" + String(repeating: "x", count: 8200) + "\"",
            "", ",,,", "Bearer", "Bearer =", "Bearer error", #"Bearer "error"="insufficient_scope""#,
        ]
    )
    func doesNot(value: String) {
        #expect(ScopeChallenge.parse([value]) == nil)
    }

    @Test func theFirstValueThatAsksIsTaken() {
        let values = [#"Bearer error="invalid_token""#, #"Bearer error="insufficient_scope", scope="b""#]
        #expect(ScopeChallenge.parse(values)?.scopes == ["b"])
    }
}
