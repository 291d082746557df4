extension ConfigKeys.Auth {
    /// `auth.*` keys of the token engine: its TLS, its timeouts and when it refreshes.
    package enum Engine {
        static let caFile = ConfigKeyDescriptor.text(
            "auth.ca_file",
            "a PEM file",
            reload: .restart,
            sample: .commented("/etc/bearerd/auth-ca.pem"),
            doc: "PEM bundle to trust for the token endpoint instead of the system's roots."
        )
        static let tlsCertFile = ConfigKeyDescriptor.text(
            "auth.tls_cert_file",
            "a PEM file",
            reload: .restart,
            sample: .commented("/etc/bearerd/client.pem"),
            doc: """
                A client certificate (chain, leaf first) and its key (mode 0600) presented to the token
                endpoint: required by client_auth: tls_client_auth, allowed with any client_auth (for
                certificate-bound tokens). The files are looked at before each token request: a renewed
                certificate is presented from the next request on, without a restart; a half-written pair
                (a key that is not the certificate's) keeps the previous one until both agree.
                """
        )
        static let tlsKeyFile = ConfigKeyDescriptor.text(
            "auth.tls_key_file",
            "a PEM file of mode 0600",
            reload: .restart,
            sample: .commented("/etc/bearerd/client-cert.key"),
            doc: ""
        )
        static let requestTimeout = ConfigKeyDescriptor.duration(
            "auth.request_timeout",
            default: "10s",
            within: .milliseconds(100)...(.seconds(300)),
            reload: .restart,
            doc: "Each request to the token endpoint must be answered within this long."
        )
        static let connectTimeout = ConfigKeyDescriptor.duration(
            "auth.connect_timeout",
            default: "2s",
            within: .milliseconds(10)...(.seconds(60)),
            reload: .restart,
            doc: """
                Connecting to the token endpoint, tried once: a refused or unreachable token server is
                noticed within this long, and the backoff retries.
                """
        )
        static let leeway = ConfigKeyDescriptor.duration(
            "auth.leeway",
            default: "30s",
            within: .zero...(.seconds(3600)),
            reload: .applies,
            doc: """
                A token this close to its expiry counts as expired (at most a quarter of its lifetime, so a
                short-lived token stays usable). Expiry is the earliest of the JWT `exp` claim (corrected for
                the token server's clock, from its Date header) and `expires_in`.
                """
        )
        static let refreshMargin = ConfigKeyDescriptor.duration(
            "auth.refresh_margin",
            default: "60s",
            within: .seconds(1)...(.seconds(86_400)),
            reload: .applies,
            doc: """
                The token is refreshed ahead of its expiry by this much at least, or by 10 % of its lifetime
                if that is more (never more than half of it), with +-10 % jitter: in steady state no request
                waits for a refresh.
                """
        )
        static let defaultLifetime = ConfigKeyDescriptor.duration(
            "auth.default_lifetime",
            default: "1h",
            within: .seconds(1)...(.seconds(30 * 86_400)),
            reload: .applies,
            doc: "The lifetime of a token whose response gives neither `exp` nor `expires_in`."
        )
        static let maxRefreshesPerMinute = ConfigKeyDescriptor(
            "auth.max_refreshes_per_minute",
            .count(1...Int.max),
            default: "30",
            reload: .applies,
            doc: """
                A refresh that fails with 5xx, 408, 429 (Retry-After is honoured), a timeout or a network
                error keeps every token: the current access token is used until it really expires, and the
                refresh is retried with exponential backoff (full jitter, 1s doubling to 5m). Only a 4xx
                answer (invalid_grant, invalid_client, ...) wipes the stored tokens. On top of the backoff, at
                most this many refresh attempts are made in any minute, successful ones included: a token
                server that issues tokens living less than about 5s needs a higher limit.
                """
        )
    }
}
