extension ConfigKeys {
    /// `upstream.*`: the API bearerd forwards to.
    package enum Upstream {
        static let url = ConfigKeyDescriptor.text(
            "upstream.url",
            "the http or https URL of the API",
            reload: .applies,
            sample: .set("\"https://api.example.com/v2\""),
            doc: """
                The API to forward to (http or https). Its path is a prefix: with https://api.example.com/v2,
                a request for /users?id=1 goes to https://api.example.com/v2/users?id=1. No query, fragment
                or credentials here. Only this host is ever contacted: absolute-form targets
                (GET http://other/...), CONNECT and Host-header tricks are refused with 400.
                """
        )
        static let caFile = ConfigKeyDescriptor.text(
            "upstream.ca_file",
            "a PEM file",
            default: "",
            reload: .applies,
            doc: "PEM bundle to trust for an https upstream instead of the system's roots (empty: system roots)."
        )
        static let serverName = ConfigKeyDescriptor.text(
            "upstream.server_name",
            "a DNS name",
            default: "",
            reload: .applies,
            doc: """
                TLS server name (SNI and certificate check) for an https upstream; empty: the URL's host.
                Set it when the URL names an IP address.
                """
        )
        static let clientCertFile = ConfigKeyDescriptor.text(
            "upstream.client_cert_file",
            "a PEM file",
            reload: .applies,
            sample: .commented("/etc/bearerd/upstream-client.pem"),
            doc: """
                A client certificate (chain, leaf first) and its key (mode 0600) for an https upstream that
                asks for mTLS as well as the token. New upstream connections look at the files (at most once
                a second), so a renewed certificate is presented without a restart or reload; a half-written
                pair keeps the previous certificate until both agree.
                """
        )
        static let clientKeyFile = ConfigKeyDescriptor.text(
            "upstream.client_key_file",
            "a PEM file of mode 0600",
            reload: .applies,
            sample: .commented("/etc/bearerd/upstream-client.key"),
            doc: ""
        )
        static let connectTimeout = ConfigKeyDescriptor.duration(
            "upstream.connect_timeout",
            default: "5s",
            within: .milliseconds(10)...(.seconds(300)),
            reload: .applies,
            doc: "How long to wait for a TCP connection (504 when exceeded; a refused connection is a 502)."
        )
        static let responseTimeout = ConfigKeyDescriptor.duration(
            "upstream.response_timeout",
            default: "60s",
            within: .milliseconds(100)...(.seconds(86_400)),
            reload: .applies,
            doc: "How long to wait, once the request is sent, for the response head (504 when exceeded)."
        )
        static let readTimeout = ConfigKeyDescriptor.duration(
            "upstream.read_timeout",
            default: "60s",
            within: .milliseconds(100)...(.seconds(86_400)),
            reload: .applies,
            doc: """
                Once the response has begun: the longest pause in its body while the client could take
                more (as nginx's proxy_read_timeout). Then both connections are closed. Raise it for
                event streams that stay quiet longer.
                """
        )
        static let idleTimeout = ConfigKeyDescriptor.duration(
            "upstream.idle_timeout",
            default: "60s",
            within: .milliseconds(100)...(.seconds(86_400)),
            reload: .applies,
            doc: "Connections to the upstream are kept alive and reused; an unused one is closed after this."
        )
        static let maxIdleConnections = ConfigKeyDescriptor(
            "upstream.max_idle_connections",
            .count(0...Int(Int32.max)),
            default: "512",
            reload: .applies,
            doc: """
                Idle upstream connections kept per thread. Keep it at least as high as the number of requests
                in flight at busy times: beyond it, connections are closed after their response and opened
                again for the next request, which costs far more than an idle socket.
                """
        )

        static let section = ConfigSection(
            "upstream",
            [
                .key(url), .key(caFile), .key(serverName), .key(clientCertFile), .key(clientKeyFile),
                .key(connectTimeout), .key(responseTimeout), .key(readTimeout), .key(idleTimeout),
                .key(maxIdleConnections),
            ]
        )
    }
}
