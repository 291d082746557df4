import BearerdAuth
import BearerdConfig
import BearerdSockets
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// What the data path needs from the configuration, converted once to NIO's types.
package struct ProxySettings: Sendable {
    /// The upstream.
    package var target: UpstreamTarget
    /// TLS for an https upstream (and its client certificate); `nil` for http.
    package var tls: UpstreamTLS?
    /// SNI and certificate name for an https upstream.
    package var serverName: String?
    /// What to do with a client's own `Authorization` header.
    package var clientAuthorization: ClientAuthorizationPolicy
    /// Whether to add `X-Forwarded-For`, `-Proto`, `-Host` and `Forwarded`.
    package var forwardedHeaders: Bool
    /// Whether method, path and client-address override headers pass (`proxy.pass_override_headers`).
    package var passOverrideHeaders: Bool
    /// Largest request body in bytes, or `nil`.
    package var maxRequestBody: Int?
    /// Largest total size of request headers in bytes.
    package var maxHeaderSize: Int
    /// Longest request target in bytes (`proxy.max_request_line`).
    package var maxRequestLine: Int
    /// Most header fields in a request (`proxy.max_header_count`).
    package var maxHeaderCount: Int
    /// The three limits a request head is parsed under.
    package var requestLimits: RequestLimits {
        RequestLimits(
            maxRequestLine: self.maxRequestLine,
            maxHeaderSize: self.maxHeaderSize,
            maxHeaderCount: self.maxHeaderCount
        )
    }
    /// Open client connections over all listeners (`proxy.max_connections`).
    package var maxConnections: Int
    /// At the limit, accept and answer 503 rather than leave clients in the accept queue.
    package var refuseAtConnectionLimit: Bool
    /// How long a client connection may sit idle between requests.
    package var clientIdleTimeout: TimeAmount
    /// From a request's first byte to the end of its head.
    package var headerTimeout: TimeAmount
    /// Longest pause in a request body while bearerd reads it.
    package var bodyTimeout: TimeAmount
    /// Longest a request waits for a token being refreshed (`proxy.token_wait`).
    package var tokenWait: TimeAmount
    /// Longest a client may leave a response unread (`proxy.send_timeout`).
    package var sendTimeout: TimeAmount
    /// Longest pause in a response body from the upstream (`upstream.read_timeout`).
    package var readTimeout: TimeAmount
    /// TCP connect timeout to the upstream.
    package var connectTimeout: TimeAmount
    /// From the end of a request to the response head.
    package var responseTimeout: TimeAmount
    /// How long a pooled upstream connection may sit unused.
    package var upstreamIdleTimeout: TimeAmount
    /// Pooled upstream connections kept per event loop.
    package var maxIdleConnections: Int
    /// Request bodies up to this size are kept, so a request can be retried after a 401.
    package var retryBodyLimit: Int
    /// The most bytes of request bodies kept for retries over all connections at once; beyond
    /// it a request is forwarded without a copy, and a 401 to it passes to the client.
    package static let retryBufferTotal = 32 << 20
    /// Methods retried after a 401 (upper case).
    package var retryMethods: Set<String>
    /// Protocols a request may switch to (`proxy.allow_upgrades`, lower case).
    package var allowUpgrades: Set<String>
    /// Refuse requests a web page sent (`proxy.browser_guard`), except from `allowedOrigins`.
    package var browserGuard: Bool
    package var allowedOrigins: Set<String>
    /// The DNS-rebinding guard (`proxy.rebinding_guard`), or `nil` when it is off.
    var hostGuard: HostGuard?
    /// The shared secret TCP callers must send in `clientKeyHeader` (`proxy.client_key_file`).
    var clientKey: ClientKey?
    /// Which methods and paths may be forwarded (`proxy.allow_*` / `proxy.deny_*`).
    var access: AccessLists
    /// Whether `;` path parameters are forwarded (`proxy.allow_path_params`).
    var allowPathParams: Bool
    /// `socket_allow_uids` / `socket_allow_gids`, for unix-socket callers.
    var socketAllowUIDs: Set<UInt32>
    var socketAllowGIDs: Set<UInt32>
    /// `auth.dpop`: DPoP-bound tokens and their proofs; set by the daemon, kept across reloads.
    package var dpop: DPoPUpstream?
    /// `scheme://host[:port]` and the base path of the upstream: the start of each proof's `htu`.
    let htuPrefix: String
    /// Whether to log one line per request.
    package var accessLog: Bool
    /// Whether access lines include the query string.
    package var accessLogQuery: Bool

    /// Derives the settings from a validated configuration.
    /// - Throws: ``ProxySetupError`` when the TLS configuration cannot be built (for example an unreadable CA file).
    package init(configuration: BearerdConfiguration) throws {
        let upstream = configuration.upstream
        self.target = upstream.target
        self.htuPrefix = "\(upstream.target.scheme.rawValue)://\(upstream.target.hostHeader)\(upstream.target.basePath)"
        self.serverName = upstream.serverName
        if upstream.target.scheme == .https {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = upstream.caFile {
                do {
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile))
                } catch {
                    throw ProxySetupError(
                        "upstream.ca_file: \(caFile) holds no PEM certificate bearerd can read (\(error))"
                    )
                }
            }
            do {
                self.tls = try UpstreamTLS(
                    base: tls,
                    certificate: upstream.clientCertificate,
                    logger: Logger(label: "bearerd")
                )
            } catch let error as ClientCertificateError {
                throw ProxySetupError("\(error)")
            }
        } else {
            self.tls = nil
        }
        self.clientAuthorization = configuration.proxy.clientAuthorization
        self.forwardedHeaders = configuration.proxy.forwardedHeaders
        self.passOverrideHeaders = configuration.proxy.passOverrideHeaders
        self.maxRequestBody = configuration.proxy.maxRequestBody
        self.maxHeaderSize = configuration.proxy.maxHeaderSize
        self.maxRequestLine = configuration.proxy.maxRequestLine
        self.maxHeaderCount = configuration.proxy.maxHeaderCount
        self.maxConnections = configuration.proxy.maxConnections
        self.refuseAtConnectionLimit = configuration.proxy.refuseAtConnectionLimit
        self.clientIdleTimeout = TimeAmount(configuration.proxy.clientIdleTimeout)
        self.headerTimeout = TimeAmount(configuration.proxy.headerTimeout)
        self.bodyTimeout = TimeAmount(configuration.proxy.bodyTimeout)
        self.sendTimeout = TimeAmount(configuration.proxy.sendTimeout)
        self.tokenWait = TimeAmount(configuration.proxy.tokenWait)
        self.readTimeout = TimeAmount(upstream.readTimeout)
        self.connectTimeout = TimeAmount(upstream.connectTimeout)
        self.responseTimeout = TimeAmount(upstream.responseTimeout)
        self.upstreamIdleTimeout = TimeAmount(upstream.idleTimeout)
        self.maxIdleConnections = upstream.maxIdleConnections
        self.retryBodyLimit = configuration.proxy.retryBodyLimit
        self.retryMethods = configuration.proxy.retryMethods
        self.allowUpgrades = configuration.proxy.allowUpgrades
        self.browserGuard = configuration.proxy.browserGuard
        self.allowedOrigins = configuration.proxy.allowedOrigins
        self.hostGuard =
            configuration.proxy.rebindingGuard ? HostGuard(allowedHosts: configuration.proxy.allowedHosts) : nil
        self.access = AccessLists(configuration.proxy)
        self.allowPathParams = configuration.proxy.allowPathParams
        self.socketAllowUIDs = configuration.socketAllowUIDs
        self.socketAllowGIDs = configuration.socketAllowGIDs
        self.clientKey = try configuration.proxy.clientKeyFile.map {
            try ClientKey(file: $0, header: configuration.proxy.clientKeyHeader)
        }
        self.accessLog = configuration.log.access
        self.accessLogQuery = configuration.log.accessQuery
    }
}

/// The proxy cannot start; the message says why and what to change.
package struct ProxySetupError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { self.message }
}
