import BearerdProxy
import Configuration
import Foundation

extension BearerdConfiguration {
    /// `proxy.*`: ``ProxyOptions``, owned by the proxy.
    package typealias Proxy = ProxyOptions
}

extension ProxyOptions {
    /// Reads and checks every `proxy.*` key, adding an issue to `builder` for each bad value.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Proxy
        self.init()
        self.clientAuthorization =
            builder.choice(Keys.clientAuthorization).flatMap(ClientAuthorizationPolicy.init) ?? .replace
        self.forwardedHeaders = builder.bool(Keys.forwardedHeaders)
        self.passOverrideHeaders = builder.bool(Keys.passOverrideHeaders)
        self.addHeaders = builder.headerFields(Keys.addHeaders, forwarded: self.forwardedHeaders)
        self.limits = Limits(reading: &builder)
        self.retryMethods = builder.methods(Keys.retryMethods)
        self.retryBodyLimit = builder.size(Keys.retryBodyLimit)
        self.allowUpgrades = builder.upgradeProtocols(Keys.allowUpgrades)
        self.browserGuard = builder.bool(Keys.browserGuard)
        self.allowedOrigins = builder.normalizedSet(
            Keys.allowedOrigins,
            ConfigBuilder.origin,
            "an origin like https://app.example.com or http://localhost:3000, without a path"
        )
        self.rebindingGuard = builder.bool(Keys.rebindingGuard)
        self.allowedHosts = builder.normalizedSet(
            Keys.allowedHosts,
            ConfigBuilder.hostName,
            "a host name or address as clients send it in Host, like bearerd.internal or bearerd.internal:8080"
        )
        self.clientKeyFile = builder.secretFile(Keys.clientKeyFile)
        self.clientKeyHeader = builder.headerName(Keys.clientKeyHeader)
        self.allowMethods = builder.methods(Keys.allowMethods)
        self.denyMethods = builder.methods(Keys.denyMethods)
        self.allowPathParams = builder.bool(Keys.allowPathParams)
        self.allowPaths = builder.pathPrefixes(Keys.allowPaths, allowPathParams: self.allowPathParams)
        self.denyPaths = builder.pathPrefixes(Keys.denyPaths, allowPathParams: self.allowPathParams)
    }
}

extension ConfigKeys {
    /// `proxy.*`: limits, guards, lists and what passes to the upstream.
    package enum Proxy {
        static let clientAuthorization = ConfigKeyDescriptor(
            "proxy.client_authorization",
            .choice(ClientAuthorizationPolicy.allCases.map(\.rawValue)),
            default: ClientAuthorizationPolicy.replace.rawValue,
            reload: .applies,
            doc: """
                A client's own Authorization header:
                  replace: drop it and send bearerd's token (default);
                  keep:    forward the client's header untouched and add no token to that request;
                  reject:  answer 400, so no client can send credentials of its own.
                """
        )
        static let forwardedHeaders = ConfigKeyDescriptor.bool(
            "proxy.forwarded_headers",
            default: true,
            reload: .applies,
            doc: """
                Add X-Forwarded-For (the client's address), X-Forwarded-Proto (http), X-Forwarded-Host
                (the Host the client used) and Forwarded (RFC 7239, the same three). Values the client sent
                for these headers are replaced, never passed on, so a local process cannot forge them.
                """
        )
        static let addHeaders = ConfigKeyDescriptor.list(
            "proxy.add_headers",
            "\"Name: value\" header lines",
            reload: .applies,
            secret: true,
            doc: """
                Header fields sent upstream with every request, besides the token, as "Name: value", e.g.
                ["X-Api-Version: 2024-06-01", "X-Tenant: acme"] (as nginx's proxy_set_header). A field a
                client sent under the same name is dropped, so clients cannot change these. Up to 32 fields
                of at most 4KiB; not Host, Authorization, DPoP, a framing or hop-by-hop field, nor (while
                forwarded_headers is on) a forwarding one. Meant for values that are not secret; they are
                kept out of logs and errors all the same.
                """
        )
        static let passOverrideHeaders = ConfigKeyDescriptor.bool(
            "proxy.pass_override_headers",
            default: false,
            reload: .applies,
            doc: """
                Pass from clients to the upstream the headers that frameworks and load balancers read
                instead of the request's method, path, host, port, scheme or client address:
                \(OverrideHeaders.listed).
                Off by default: they would undo the method and path lists below, or let a caller pose as
                another client.
                """
        )
        static let retryMethods = ConfigKeyDescriptor.list(
            "proxy.retry_methods",
            "HTTP methods like GET or POST",
            default: ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST", "PATCH"],
            reload: .applies,
            doc: """
                When the upstream answers 401 to a request sent with the current token, bearerd refreshes
                the token once (another request may have done it already) and sends the request again, once,
                with the new token; the client sees only the second answer. A request is sent again only if
                its method is listed here and its body (if any) is at most retry_body_limit, which bearerd
                keeps in memory while the request is in flight; otherwise the 401 goes to the client.
                Sending a request twice is safe when the upstream refused the first one with 401 without
                acting on it, which is what 401 means. If your upstream may act on a request and still
                answer 401, list only idempotent methods (GET, HEAD, OPTIONS, PUT, DELETE). A 403 is never
                retried.
                """
        )
        static let retryBodyLimit = ConfigKeyDescriptor(
            "proxy.retry_body_limit",
            .size(0...Int.max),
            default: "64KiB",
            reload: .applies,
            doc: ""
        )
        static let allowUpgrades = ConfigKeyDescriptor.list(
            "proxy.allow_upgrades",
            "protocol names like websocket, without a version",
            default: ["websocket"],
            reload: .applies,
            doc: """
                Protocols a request may switch to (a GET with Upgrade and Connection: upgrade, RFC 9110
                §7.8). The handshake goes upstream with the token; when the upstream answers 101 Switching
                Protocols the two connections carry raw bytes both ways, with backpressure, until either
                closes or no byte moves for client_idle_timeout. Only the allowed protocols of the client's
                Upgrade go upstream; with none, Upgrade is dropped (the request goes as a plain GET). A
                WebSocket handshake needs a valid Sec-WebSocket-Key and Sec-WebSocket-Version: 13 (else
                400), and a 101 is spliced only when it names one offered protocol, with Connection: upgrade
                and, for WebSocket, the Sec-WebSocket-Accept of the key sent (else 502, both connections
                close). Any request with Upgrade is the last on its connection. h2c cannot be listed.
                [] turns upgrades off.
                """
        )
        static let browserGuard = ConfigKeyDescriptor.bool(
            "proxy.browser_guard",
            default: true,
            reload: .applies,
            doc: """
                A web page open in a browser on this machine can send requests to 127.0.0.1 too. With the
                guard on, a request carrying an Origin header not listed below (CORS preflights included), or
                Sec-Fetch-Site: cross-site or same-site, is refused with 403 and never forwarded. Requests from
                curl and other programs carry neither. Default true.
                """
        )
        static let allowedOrigins = ConfigKeyDescriptor.list(
            "proxy.allowed_origins",
            "origins like https://app.example.com",
            reload: .applies,
            doc: """
                Origins whose pages may use the proxy anyway, as browsers send them: scheme://host[:port].
                None by default.
                """
        )
        static let rebindingGuard = ConfigKeyDescriptor.bool(
            "proxy.rebinding_guard",
            default: true,
            reload: .applies,
            doc: """
                DNS rebinding: a web page can make its own host name resolve to 127.0.0.1 and then send
                same-origin requests to bearerd, with no Origin header. Its Host header still carries the
                page's name, so with this guard on, a TCP request is forwarded only when Host is one of the
                listener's own names: 127.0.0.1:PORT, localhost:PORT, [::1]:PORT or the address the client
                connected to (the port left out only when it is 80). Anything else gets 403. Unix-socket
                listeners are not checked: browsers cannot reach them. Default true.
                """
        )
        static let allowedHosts = ConfigKeyDescriptor.list(
            "proxy.allowed_hosts",
            "host names as clients send them in Host",
            reload: .applies,
            doc: """
                More names clients may use in Host, e.g. a container's name: "name" (at the listener's
                port) or "name:port". None by default.
                """
        )
        static let clientKeyFile = ConfigKeyDescriptor.text(
            "proxy.client_key_file",
            "a file of mode 0600",
            reload: .applies,
            sample: .commented("/etc/bearerd/client-key"),
            doc: """
                A shared secret that callers over TCP must send (any local process can reach 127.0.0.1; only
                those that can read this file can then use the token). A file holding the key alone, at least
                16 characters, mode 0600; compared in constant time; the header is removed before the request
                is forwarded. Callers on a unix socket are limited by its mode instead. None by default.
                """
        )
        static let clientKeyHeader = ConfigKeyDescriptor.text(
            "proxy.client_key_header",
            "a header name",
            default: "X-Bearerd-Key",
            reload: .applies,
            doc: "The header that carries it."
        )
        static let allowMethods = ConfigKeyDescriptor.list(
            "proxy.allow_methods",
            "HTTP methods",
            reload: .applies,
            doc: """
                What may be forwarded with the token, like kubectl proxy's --accept-paths/--reject-paths/
                --reject-methods. Methods by name; paths as prefixes by whole segments ("/api/" covers
                /api/x; "/admin" covers /admin and /admin/x, not /administrator). Paths are compared in the
                one canonical form bearerd also forwards: unreserved %-escapes decoded, one slash for many;
                targets with no single meaning (%2F, %5C, \\, %00, #, dot segments in any encoding,
                double-encoded escapes) are refused with 400 before any list is read. A deny entry matches in
                any letter case (some upstreams ignore case), an allow entry only as written. A deny entry
                wins; an empty allow list allows everything. Refused requests get 403 and are never
                forwarded. None by default.
                """
        )
        static let denyMethods = ConfigKeyDescriptor.list(
            "proxy.deny_methods",
            "HTTP methods",
            reload: .applies,
            doc: ""
        )
        static let allowPaths = ConfigKeyDescriptor.list(
            "proxy.allow_paths",
            "path prefixes",
            reload: .applies,
            doc: ""
        )
        static let denyPaths = ConfigKeyDescriptor.list("proxy.deny_paths", "path prefixes", reload: .applies, doc: "")
        static let allowPathParams = ConfigKeyDescriptor.bool(
            "proxy.allow_path_params",
            default: false,
            reload: .applies,
            doc: """
                Forward ;path parameters (/a;v=1/b). Off by default: servers disagree on what they mean
                (Tomcat reads /admin;x as /admin), so a request path holding ; or %3B gets 400.
                """
        )

        static let section = ConfigSection(
            "proxy",
            [
                .key(clientAuthorization), .key(forwardedHeaders), .key(passOverrideHeaders), .key(addHeaders),
                .key(maxRequestBody),
                .key(maxHeaderSize), .key(maxHeaderCount), .key(maxRequestLine), .key(maxConnections),
                .key(atConnectionLimit), .key(clientIdleTimeout), .key(headerTimeout), .key(bodyTimeout),
                .key(sendTimeout), .key(tokenWait), .key(retryMethods), .key(retryBodyLimit), .key(allowUpgrades),
                .key(browserGuard), .key(allowedOrigins), .key(rebindingGuard), .key(allowedHosts),
                .key(clientKeyFile), .key(clientKeyHeader), .key(allowMethods), .key(denyMethods), .key(allowPaths),
                .key(denyPaths), .key(allowPathParams),
            ]
        )
    }
}
