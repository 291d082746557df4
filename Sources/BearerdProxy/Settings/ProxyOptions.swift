import BearerdAuth

/// `proxy.*`: limits, guards, lists and what passes to the upstream, as configured. The
/// config reads it (`BearerdConfiguration+Proxy.swift`, where each key is declared).
package struct ProxyOptions: Sendable {
    /// `proxy.client_authorization`: what to do with a client's own `Authorization` header.
    package var clientAuthorization: ClientAuthorizationPolicy
    /// `proxy.forwarded_headers`: add `X-Forwarded-For`, `-Proto`, `-Host`.
    package var forwardedHeaders: Bool
    /// `proxy.max_*`, `proxy.*_timeout`, `proxy.at_connection_limit`, `proxy.token_wait`:
    /// what a client may send and how long bearerd waits for it.
    package var limits: Limits
    /// `proxy.retry_body_limit`: request bodies up to this size are kept for a retry after 401.
    package var retryBodyLimit: Int
    /// `proxy.retry_methods`: methods (upper case) retried after a 401.
    package var retryMethods: Set<String>
    /// `proxy.allow_upgrades`: protocols (lower case) a request may switch to (RFC 9110 §7.8).
    package var allowUpgrades: Set<String>
    /// Upgrades `proxy.allow_upgrades` may not list: a connection that carries many requests
    /// (HTTP/2) would take them past every per-request check.
    package static let multiplexedUpgrades: Set<String> = ["h2c", "h2"]
    /// `proxy.browser_guard`: refuse requests a web page sent.
    package var browserGuard: Bool
    /// `proxy.allowed_origins`: origins (lower case) whose pages may use the proxy.
    package var allowedOrigins: Set<String>
    /// `proxy.rebinding_guard`: refuse a `Host` that is not one of the listener's names.
    package var rebindingGuard: Bool
    /// `proxy.allowed_hosts`: more names (lower case) `Host` may carry: `name` or `name:port`.
    package var allowedHosts: Set<String>
    /// `proxy.client_key_file`, resolved: a shared secret TCP callers must send.
    package var clientKeyFile: String?
    /// `proxy.client_key_header`: the header that carries it (stripped before forwarding).
    package var clientKeyHeader: String
    /// `proxy.allow_methods` / `proxy.deny_methods` (upper case; an empty allow list allows all).
    package var allowMethods: Set<String>
    package var denyMethods: Set<String>
    /// `proxy.allow_paths` / `proxy.deny_paths`: path prefixes, by whole segments.
    package var allowPaths: [String]
    package var denyPaths: [String]
    /// `proxy.allow_path_params`: whether `;` may appear in a request path (off: 400).
    package var allowPathParams: Bool
    /// `proxy.pass_override_headers`: whether method, path and address override headers pass.
    package var passOverrideHeaders: Bool
    /// `proxy.add_headers`: fields sent upstream with every request, replacing the client's.
    package var addHeaders: [Header]

    /// A header field bearerd adds to every upstream request (`proxy.add_headers`), its name as
    /// written in the config (names compare without case).
    package typealias Header = NameValue

    /// Every list empty and every switch off, the limits at zero: the config's reader sets
    /// each field from its key.
    package init() {
        self.clientAuthorization = .replace
        self.forwardedHeaders = false
        self.limits = Limits()
        self.retryBodyLimit = 0
        self.retryMethods = []
        self.allowUpgrades = []
        self.browserGuard = false
        self.allowedOrigins = []
        self.rebindingGuard = false
        self.allowedHosts = []
        self.clientKeyFile = nil
        self.clientKeyHeader = ""
        self.allowMethods = []
        self.denyMethods = []
        self.allowPaths = []
        self.denyPaths = []
        self.allowPathParams = false
        self.passOverrideHeaders = false
        self.addHeaders = []
    }
}
