import BearerdAuth
import Foundation

extension ConfigBuilder {
    /// `auth.verify.*`: on when `jwks_uri` or `secret_file` is set.
    mutating func verify(source: BearerdConfiguration.Auth.Source) -> BearerdConfiguration.Auth.Verify? {
        let jwks = self.string("auth.verify.jwks_uri")
        let secret = self.string("auth.verify.secret_file").map(self.resolve)
        var issuer = self.string("auth.verify.issuer")
        let audience = self.string("auth.verify.audience")
        let keys: BearerdConfiguration.Auth.Verify.Keys
        switch (jwks, secret) {
        case (nil, nil):
            for (key, value) in [("auth.verify.issuer", issuer), ("auth.verify.audience", audience)] where value != nil
            {
                self.issue(key, "applies with auth.verify.jwks_uri or auth.verify.secret_file, which say how to check")
            }
            return nil
        case (_?, _?):
            self.issue("auth.verify.secret_file", "set auth.verify.jwks_uri or auth.verify.secret_file, not both")
            return nil
        case ("discover", nil):
            keys = .discovered
        case (let url?, nil):
            if !(url.hasPrefix("https://") || url.hasPrefix("http://")) || URL(string: url)?.host == nil
                || url.utf8.count > 2048
            {
                self.issue("auth.verify.jwks_uri", "must be discover or an http(s) URL (got \"\(url.prefix(80))\")")
            } else if let refusal = PlainHTTP.refusal(url: url, allowInsecure: self.allowInsecureHTTP) {
                self.issue("auth.verify.jwks_uri", refusal)
            }
            keys = .jwks(url)
        case (nil, let path?):
            if let problem = SecretFileCheck.problem(path: path) { self.issue("auth.verify.secret_file", problem) }
            keys = .secret(path)
        }
        switch source {
        case .staticFile:
            self.issue("auth.verify", "does not apply to a static token: bearerd injects it as it is")
        case .oauth2(let oauth2):
            if keys == .discovered, oauth2.issuer == nil {
                self.issue("auth.verify.jwks_uri", "discover needs auth.issuer: with auth.token_url give the JWKS URL")
            }
            issuer = issuer ?? oauth2.issuer
        case .json:
            if keys == .discovered {
                self.issue("auth.verify.jwks_uri", "discover needs auth.issuer: give the JWKS URL")
            }
        }
        return BearerdConfiguration.Auth.Verify(keys: keys, issuer: issuer, audience: audience)
    }
}
