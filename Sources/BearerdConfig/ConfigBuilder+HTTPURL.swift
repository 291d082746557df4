import BearerdAuth
import Foundation

extension ConfigBuilder {
    /// The one check of a URL the config names for bearerd to reach (a token endpoint, an
    /// issuer, a JWKS, a trace receiver) or to name (an assertion's audience): http or https, a
    /// host, at most 2048 bytes, no fragment where `fragmentAllowed` is false, and plain http to
    /// another machine only with `allow_insecure_http` when `reached`. An issue on `key` says what
    /// is wrong; `expected` says what the key takes. Returns whether `url` passed.
    @discardableResult
    mutating func checkHTTPURL(
        _ url: String,
        key: String,
        expected: String = "an http or https URL",
        fragmentAllowed: Bool = true,
        reached: Bool = true
    ) -> Bool {
        let isHTTP = url.hasPrefix("https://") || url.hasPrefix("http://")
        guard isHTTP, url.utf8.count <= 2048, URL(string: url)?.host != nil, fragmentAllowed || !url.contains("#")
        else {
            self.issue(key, "must be \(expected) (got \"\(url.prefix(80))\")")
            return false
        }
        if reached, let refusal = PlainHTTP.refusal(url: url, allowInsecure: self.allowInsecureHTTP) {
            self.issue(key, refusal)
            return false
        }
        return true
    }
}
