import Logging

/// Everything `bearerd serve` needs, validated. Built by ``ConfigLoader``; every field has the
/// default documented in `config/bearerd.example.yaml`.
package struct BearerdConfiguration: Sendable {
    /// Where to accept connections (`listen`).
    package var listen: [ListenAddress]
    /// Whether non-loopback TCP addresses are allowed (`allow_remote`).
    package var allowRemote: Bool
    /// Mode of unix sockets (`socket_mode`).
    package var socketMode: UInt32
    /// Group of unix sockets (`socket_group`), resolved to a gid; `nil` keeps the process's group.
    package var socketGroup: UInt32?
    /// `socket_allow_uids` / `socket_allow_gids`: when either is set, a unix-socket caller whose
    /// uid (or primary gid) is not listed is closed unanswered (checked with `SO_PEERCRED`).
    package var socketAllowUIDs: Set<UInt32>
    package var socketAllowGIDs: Set<UInt32>
    /// Event-loop threads (`threads`); 0 means one per core.
    package var threads: Int
    /// How long in-flight requests may run after SIGTERM (`shutdown_grace`).
    package var shutdownGrace: Duration

    /// The upstream and how to talk to it.
    package var upstream: Upstream
    /// How requests are rewritten and limited.
    package var proxy: Proxy
    /// Where the token comes from.
    package var auth: Auth
    /// Where tokens are kept.
    package var store: Store
    /// The admin socket the CLI talks to.
    package var admin: Admin
    /// Logging.
    package var log: Log

    /// `upstream.*`
    package struct Upstream: Sendable {
        /// `upstream.url`.
        package var target: UpstreamTarget
        /// `upstream.ca_file`: PEM bundle to trust instead of the system's roots.
        package var caFile: String?
        /// `upstream.server_name`: TLS SNI and certificate name; defaults to the URL's host.
        package var serverName: String?
        /// `upstream.client_cert_file` and `upstream.client_key_file`: a client certificate for an
        /// upstream that asks for mTLS as well as a token; re-read when the files change.
        package var clientCertificate: ClientCertificateFiles?
        /// `upstream.connect_timeout`.
        package var connectTimeout: Duration
        /// `upstream.response_timeout`: from the end of the request to the response head.
        package var responseTimeout: Duration
        /// `upstream.idle_timeout`: how long a pooled connection may sit unused.
        package var idleTimeout: Duration
        /// `upstream.read_timeout`: longest pause in a response body from the upstream while the
        /// client is ready for more; then both connections close.
        package var readTimeout: Duration
        /// `upstream.max_idle_connections`: pooled connections kept per thread.
        package var maxIdleConnections: Int
    }

    /// `proxy.*`
    package struct Proxy: Sendable {
        /// `proxy.client_authorization`: what to do with a client's own `Authorization` header.
        package var clientAuthorization: ClientAuthorizationPolicy
        /// `proxy.forwarded_headers`: add `X-Forwarded-For`, `-Proto`, `-Host`.
        package var forwardedHeaders: Bool
        /// `proxy.max_request_body`: bytes; `nil` means unlimited.
        package var maxRequestBody: Int?
        /// `proxy.max_header_size`: total bytes of request headers before 431.
        package var maxHeaderSize: Int
        /// `proxy.client_idle_timeout`: how long a client keep-alive connection may sit idle.
        package var clientIdleTimeout: Duration
        /// `proxy.max_request_line`: longest request target in bytes before 414.
        package var maxRequestLine: Int
        /// `proxy.max_header_count`: most header fields in a request before 431.
        package var maxHeaderCount: Int
        /// `proxy.max_connections`: open client connections; more wait to be accepted.
        package var maxConnections: Int
        /// `proxy.at_connection_limit`: `wait` (in the kernel's accept queue) or `refuse` (accept
        /// and answer 503 with `Retry-After`).
        package var refuseAtConnectionLimit: Bool
        /// `proxy.header_timeout`: from a request's first byte to the end of its head, before 408.
        package var headerTimeout: Duration
        /// `proxy.body_timeout`: longest pause in a request body while bearerd reads it, before 408.
        package var bodyTimeout: Duration
        /// `proxy.send_timeout`: longest time a client may go without reading any of a response
        /// bearerd has for it; then both connections close.
        package var sendTimeout: Duration
        /// `proxy.token_wait`: longest a request waits for a token being refreshed, before 503.
        package var tokenWait: Duration
        /// `proxy.retry_body_limit`: request bodies up to this size are kept for a retry after 401.
        package var retryBodyLimit: Int
        /// `proxy.retry_methods`: methods (upper case) retried after a 401.
        package var retryMethods: Set<String>
        /// `proxy.allow_upgrades`: protocols (lower case) a request may switch to (RFC 9110
        /// §7.8), its connection then spliced to the upstream's as bytes.
        package var allowUpgrades: Set<String>
        /// `proxy.browser_guard`: refuse requests a web page sent (foreign `Origin`, cross-site
        /// fetch metadata).
        package var browserGuard: Bool
        /// `proxy.allowed_origins`: origins (`scheme://host[:port]`, lower case) whose pages may
        /// use the proxy.
        package var allowedOrigins: Set<String>
        /// `proxy.rebinding_guard`: refuse requests whose `Host` is not one of the listener's own
        /// names (DNS rebinding).
        package var rebindingGuard: Bool
        /// `proxy.allowed_hosts`: more names (lower case) the `Host` header may carry: `name`
        /// (at the listener's port) or `name:port`.
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
        /// `proxy.pass_override_headers`: whether `X-HTTP-Method-Override`, `X-Original-URL`,
        /// `X-Rewrite-URL`, `X-Real-IP`, `Forwarded` and their kind reach the upstream (off:
        /// removed, since they can undo the method and path lists).
        package var passOverrideHeaders: Bool
    }

    /// `store.*`: the encrypted token store.
    package struct Store: Sendable {
        /// `store.path`, resolved.
        package var path: String
        /// `store.key_file`, resolved: 32 random bytes (`bearerd keygen`).
        package var keyFile: String?
        /// `store.passphrase_file`, resolved: stretched with scrypt.
        package var passphraseFile: String?
        /// `store.profile`: written into the store's header and checked when it is read; with
        /// the postgres backend, the name of the fleet's row too.
        package var profile: String
        /// `store.postgres.*` when `store.backend: postgres`: the fleet's shared session.
        package var postgres: Postgres?

        /// Whether tokens are kept on disk (a key is configured) or in memory only.
        package var isEncryptedOnDisk: Bool { self.keyFile != nil || self.passphraseFile != nil }
    }

    /// `admin.*` and `metrics.listen`
    package struct Admin: Sendable {
        /// `admin.socket`, resolved: the unix socket `login`, `logout`, `status` and `token` use.
        package var socket: String
        /// `metrics.listen`: a TCP address for `/metrics`, `/health` and `/ready` (none by
        /// default; the admin socket serves them too).
        package var metricsListen: ListenAddress?
    }

    /// `log.*`
    package struct Log: Sendable {
        /// `log.level`.
        package var level: Logger.Level
        /// `log.access`: one line per request.
        package var access: Bool
        /// `log.access_query`: include the query string in access lines.
        package var accessQuery: Bool
    }
}

/// What the proxy does with an `Authorization` header sent by the client (`proxy.client_authorization`).
package enum ClientAuthorizationPolicy: String, Sendable, Hashable, CaseIterable {
    /// Drop it and send bearerd's token (default).
    case replace
    /// Forward the client's header unchanged and add no token.
    case keep
    /// Refuse the request with 400.
    case reject
}
