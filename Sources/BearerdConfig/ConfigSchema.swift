/// Every key the config file and the environment may set. Anything else is an error, so a typo
/// never silently falls back to a default.
enum ConfigSchema {
    /// The shape a key's value must have.
    enum Kind: Sendable {
        case scalar
        case list
    }

    /// Known keys, dotted, with their shape.
    static let keys: [String: Kind] = [
        "listen": .list,
        "allow_remote": .scalar,
        "allow_insecure_http": .scalar,
        "socket_mode": .scalar,
        "socket_group": .scalar,
        "socket_allow_uids": .list,
        "socket_allow_gids": .list,
        "threads": .scalar,
        "shutdown_grace": .scalar,
        "upstream.url": .scalar,
        "upstream.ca_file": .scalar,
        "upstream.server_name": .scalar,
        "upstream.client_cert_file": .scalar,
        "upstream.client_key_file": .scalar,
        "upstream.connect_timeout": .scalar,
        "upstream.response_timeout": .scalar,
        "upstream.idle_timeout": .scalar,
        "upstream.read_timeout": .scalar,
        "upstream.max_idle_connections": .scalar,
        "proxy.client_authorization": .scalar,
        "proxy.forwarded_headers": .scalar,
        "proxy.max_request_body": .scalar,
        "proxy.max_header_size": .scalar,
        "proxy.client_idle_timeout": .scalar,
        "proxy.max_request_line": .scalar,
        "proxy.max_header_count": .scalar,
        "proxy.max_connections": .scalar,
        "proxy.at_connection_limit": .scalar,
        "proxy.header_timeout": .scalar,
        "proxy.body_timeout": .scalar,
        "proxy.send_timeout": .scalar,
        "proxy.token_wait": .scalar,
        "proxy.retry_body_limit": .scalar,
        "proxy.retry_methods": .list,
        "proxy.allow_upgrades": .list,
        "proxy.browser_guard": .scalar,
        "proxy.allowed_origins": .list,
        "proxy.rebinding_guard": .scalar,
        "proxy.allowed_hosts": .list,
        "proxy.client_key_file": .scalar,
        "proxy.client_key_header": .scalar,
        "proxy.allow_methods": .list,
        "proxy.deny_methods": .list,
        "proxy.allow_paths": .list,
        "proxy.deny_paths": .list,
        "proxy.allow_path_params": .scalar,
        "proxy.pass_override_headers": .scalar,
        "auth.static_token_file": .scalar,
        "auth.token_url": .scalar,
        "auth.issuer": .scalar,
        "auth.client_id": .scalar,
        "auth.client_secret_file": .scalar,
        "auth.client_auth": .scalar,
        "auth.client_key_file": .scalar,
        "auth.client_key_id": .scalar,
        "auth.client_assertion_alg": .scalar,
        "auth.client_assertion_audience": .scalar,
        "auth.scopes": .list,
        "auth.extra_params": .list,
        "auth.client_credentials": .scalar,
        "auth.revocation_url": .scalar,
        "auth.device_authorization_url": .scalar,
        "auth.refresh_token_file": .scalar,
        "auth.ca_file": .scalar,
        "auth.tls_cert_file": .scalar,
        "auth.dpop": .scalar,
        "auth.verify.jwks_uri": .scalar,
        "auth.verify.secret_file": .scalar,
        "auth.verify.issuer": .scalar,
        "auth.verify.audience": .scalar,
        "auth.tls_key_file": .scalar,
        "auth.request_timeout": .scalar,
        "auth.connect_timeout": .scalar,
        "auth.leeway": .scalar,
        "auth.refresh_margin": .scalar,
        "auth.default_lifetime": .scalar,
        "auth.max_refreshes_per_minute": .scalar,
        "auth.json.login_url": .scalar,
        "auth.json.refresh_url": .scalar,
        "auth.json.content_type": .scalar,
        "auth.json.headers": .list,
        "auth.json.login_body": .scalar,
        "auth.json.refresh_body": .scalar,
        "auth.json.access_token": .scalar,
        "auth.json.refresh_token": .scalar,
        "auth.json.expires_in": .scalar,
        "auth.json.expires_at": .scalar,
        "auth.json.logout_url": .scalar,
        "auth.json.logout_body": .scalar,
        "store.path": .scalar,
        "store.key_file": .scalar,
        "store.passphrase_file": .scalar,
        "store.profile": .scalar,
        "store.backend": .scalar,
        "store.postgres.url_file": .scalar,
        "store.postgres.sslmode": .scalar,
        "store.postgres.ca_file": .scalar,
        "store.postgres.table": .scalar,
        "store.postgres.host_name": .scalar,
        "store.postgres.lock_timeout": .scalar,
        "store.postgres.poll_interval": .scalar,
        "store.postgres.connect_timeout": .scalar,
        "admin.socket": .scalar,
        "metrics.listen": .scalar,
        "log.level": .scalar,
        "log.access": .scalar,
        "log.access_query": .scalar,
    ]

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
