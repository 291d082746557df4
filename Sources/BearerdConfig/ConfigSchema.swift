/// Every key the config file and the environment may set. Anything else is an error, so a typo
/// never silently falls back to a default.
package enum ConfigSchema {
    /// The shape a key's value must have.
    package enum Kind: Sendable {
        case scalar
        case list
    }

    /// What a reload does with a changed value (``ReloadService`` warns of every key that is
    /// not applied; `RestartOnlyKeysTests` checks that it compares each of them).
    package enum Reload: Sendable, Equatable {
        /// Applied: new connections and the next refresh take the new value.
        case applies
        /// Made once at start (the token client, the store, the event loops, the admin and
        /// metrics listeners): the new value waits for a restart, and the reload says so.
        case restart
        /// As `restart`, and the stored tokens belong to the old value (another token server,
        /// client or store): the session would not follow a restart by itself.
        case newSession
    }

    /// A key's shape and what a reload does with it, declared together so that a new key
    /// cannot be added without saying whether a reload applies it.
    struct Key: Sendable {
        var kind: Kind
        var reload: Reload

        init(_ kind: Kind, _ reload: Reload) {
            self.kind = kind
            self.reload = reload
        }
    }

    /// Known keys, dotted, with their shape and reload behaviour.
    static let declared: [String: Key] = [
        "listen": Key(.list, .applies),
        "allow_remote": Key(.scalar, .applies),
        "allow_insecure_http": Key(.scalar, .applies),
        "socket_mode": Key(.scalar, .applies),
        "socket_group": Key(.scalar, .applies),
        "socket_allow_uids": Key(.list, .applies),
        "socket_allow_gids": Key(.list, .applies),
        "threads": Key(.scalar, .restart),
        "shutdown_grace": Key(.scalar, .restart),
        "upstream.url": Key(.scalar, .applies),
        "upstream.ca_file": Key(.scalar, .applies),
        "upstream.server_name": Key(.scalar, .applies),
        "upstream.client_cert_file": Key(.scalar, .applies),
        "upstream.client_key_file": Key(.scalar, .applies),
        "upstream.connect_timeout": Key(.scalar, .applies),
        "upstream.response_timeout": Key(.scalar, .applies),
        "upstream.idle_timeout": Key(.scalar, .applies),
        "upstream.read_timeout": Key(.scalar, .applies),
        "upstream.max_idle_connections": Key(.scalar, .applies),
        "proxy.client_authorization": Key(.scalar, .applies),
        "proxy.forwarded_headers": Key(.scalar, .applies),
        "proxy.max_request_body": Key(.scalar, .applies),
        "proxy.max_header_size": Key(.scalar, .applies),
        "proxy.client_idle_timeout": Key(.scalar, .applies),
        "proxy.max_request_line": Key(.scalar, .applies),
        "proxy.max_header_count": Key(.scalar, .applies),
        "proxy.max_connections": Key(.scalar, .applies),
        "proxy.at_connection_limit": Key(.scalar, .applies),
        "proxy.header_timeout": Key(.scalar, .applies),
        "proxy.body_timeout": Key(.scalar, .applies),
        "proxy.send_timeout": Key(.scalar, .applies),
        "proxy.token_wait": Key(.scalar, .applies),
        "proxy.retry_body_limit": Key(.scalar, .applies),
        "proxy.retry_methods": Key(.list, .applies),
        "proxy.allow_upgrades": Key(.list, .applies),
        "proxy.browser_guard": Key(.scalar, .applies),
        "proxy.allowed_origins": Key(.list, .applies),
        "proxy.rebinding_guard": Key(.scalar, .applies),
        "proxy.allowed_hosts": Key(.list, .applies),
        "proxy.client_key_file": Key(.scalar, .applies),
        "proxy.client_key_header": Key(.scalar, .applies),
        "proxy.allow_methods": Key(.list, .applies),
        "proxy.deny_methods": Key(.list, .applies),
        "proxy.allow_paths": Key(.list, .applies),
        "proxy.deny_paths": Key(.list, .applies),
        "proxy.allow_path_params": Key(.scalar, .applies),
        "proxy.pass_override_headers": Key(.scalar, .applies),
        "auth.static_token_file": Key(.scalar, .newSession),
        "auth.token_url": Key(.scalar, .newSession),
        "auth.issuer": Key(.scalar, .newSession),
        "auth.client_id": Key(.scalar, .newSession),
        "auth.client_secret_file": Key(.scalar, .restart),
        "auth.client_auth": Key(.scalar, .restart),
        "auth.client_key_file": Key(.scalar, .restart),
        "auth.client_key_id": Key(.scalar, .restart),
        "auth.client_assertion_alg": Key(.scalar, .restart),
        "auth.client_assertion_audience": Key(.scalar, .restart),
        "auth.scopes": Key(.list, .restart),
        "auth.extra_params": Key(.list, .restart),
        "auth.client_credentials": Key(.scalar, .restart),
        "auth.revocation_url": Key(.scalar, .restart),
        "auth.device_authorization_url": Key(.scalar, .restart),
        "auth.refresh_token_file": Key(.scalar, .restart),
        "auth.ca_file": Key(.scalar, .restart),
        "auth.tls_cert_file": Key(.scalar, .restart),
        "auth.dpop": Key(.scalar, .restart),
        "auth.verify.jwks_uri": Key(.scalar, .restart),
        "auth.verify.secret_file": Key(.scalar, .restart),
        "auth.verify.issuer": Key(.scalar, .restart),
        "auth.verify.audience": Key(.scalar, .restart),
        "auth.tls_key_file": Key(.scalar, .restart),
        "auth.request_timeout": Key(.scalar, .restart),
        "auth.connect_timeout": Key(.scalar, .restart),
        "auth.leeway": Key(.scalar, .applies),
        "auth.refresh_margin": Key(.scalar, .applies),
        "auth.default_lifetime": Key(.scalar, .applies),
        "auth.max_refreshes_per_minute": Key(.scalar, .applies),
        "auth.json.login_url": Key(.scalar, .newSession),
        "auth.json.refresh_url": Key(.scalar, .newSession),
        "auth.json.content_type": Key(.scalar, .restart),
        "auth.json.headers": Key(.list, .restart),
        "auth.json.login_body": Key(.scalar, .restart),
        "auth.json.refresh_body": Key(.scalar, .restart),
        "auth.json.access_token": Key(.scalar, .restart),
        "auth.json.refresh_token": Key(.scalar, .restart),
        "auth.json.expires_in": Key(.scalar, .restart),
        "auth.json.expires_at": Key(.scalar, .restart),
        "auth.json.logout_url": Key(.scalar, .restart),
        "auth.json.logout_body": Key(.scalar, .restart),
        "store.path": Key(.scalar, .newSession),
        "store.key_file": Key(.scalar, .newSession),
        "store.passphrase_file": Key(.scalar, .newSession),
        "store.profile": Key(.scalar, .newSession),
        "store.backend": Key(.scalar, .newSession),
        "store.postgres.url_file": Key(.scalar, .newSession),
        "store.postgres.sslmode": Key(.scalar, .restart),
        "store.postgres.ca_file": Key(.scalar, .restart),
        "store.postgres.table": Key(.scalar, .newSession),
        "store.postgres.host_name": Key(.scalar, .restart),
        "store.postgres.lock_timeout": Key(.scalar, .restart),
        "store.postgres.poll_interval": Key(.scalar, .restart),
        "store.postgres.connect_timeout": Key(.scalar, .restart),
        "admin.socket": Key(.scalar, .restart),
        "metrics.listen": Key(.scalar, .restart),
        "log.level": Key(.scalar, .applies),
        "log.access": Key(.scalar, .applies),
        "log.access_query": Key(.scalar, .applies),
    ]

    /// Known keys, dotted, with their shape.
    static let keys: [String: Kind] = declared.mapValues(\.kind)

    /// What a reload does with a change of `key` (a dotted key ``keys`` has); `nil` for an
    /// unknown key.
    package static func reload(of key: String) -> Reload? { declared[key]?.reload }

    /// The keys whose reload behaviour is `reload`, sorted.
    package static func keys(reloading reload: Reload) -> [String] {
        declared.filter { $0.value.reload == reload }.keys.sorted()
    }

    /// Keys users write that bearerd deliberately does not have, with what to write instead.
    static let hints: [String: String] = [
        "auth.client_secret":
            "secrets are read from files: put it in a file of mode 0600 and set auth.client_secret_file (or pass a systemd credential)",
        "auth.refresh_token":
            "a refresh token is read from a file: set auth.refresh_token_file, or run `bearerd login --refresh-token-stdin`",
        "auth.password": "passwords are never stored: run `bearerd login`, which asks for it",
        "auth.username": "run `bearerd login`, which asks for the user name",
        "store.key": "the key is read from a file: create one with `bearerd keygen` and set store.key_file",
        "auth.token": "a static token is read from a file: set auth.static_token_file",
    ]

    /// Sections: keys that hold other keys.
    static let sections: Set<String> = Set(
        keys.keys.flatMap { key in
            let parts = key.split(separator: ".")
            return (1..<max(1, parts.count)).map { parts[..<$0].joined(separator: ".") }
        }
    )

    /// The environment variable that overrides `key`: `upstream.url` → `BEARERD_UPSTREAM_URL`.
    static func environmentName(of key: String) -> String {
        "BEARERD_" + key.uppercased().replacingDots()
    }

    /// Environment variables with the `BEARERD_` prefix that are not settings.
    static let nonSettingEnvironment: Set<String> = ["BEARERD_CONFIG"]

    /// The known key closest to `key`, for "did you mean" hints.
    static func suggestion(for key: String) -> String? {
        let candidates = (Array(keys.keys) + Array(sections)).map { ($0, editDistance(key, $0)) }
        guard let best = candidates.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) else { return nil }
        return best.1 <= max(2, key.count / 4) ? best.0 : nil
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}

extension String {
    fileprivate func replacingDots() -> String {
        String(self.map { $0 == "." ? "_" : $0 })
    }
}
