extension ProxyOptions {
    /// What a client may send and how long bearerd waits for it: the `proxy.*` sizes, counts
    /// and timeouts, as configured (read in `BearerdConfiguration+ProxyLimits.swift`).
    package struct Limits: Sendable {
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
        /// `proxy.at_connection_limit: refuse`: accept and answer 503 rather than leave clients queued.
        package var refuseAtConnectionLimit: Bool
        /// `proxy.header_timeout`: from a request's first byte to the end of its head, before 408.
        package var headerTimeout: Duration
        /// `proxy.body_timeout`: longest pause in a request body while bearerd reads it, before 408.
        package var bodyTimeout: Duration
        /// `proxy.send_timeout`: longest a client may leave a response unread; then both close.
        package var sendTimeout: Duration
        /// `proxy.token_wait`: longest a request waits for a token being refreshed, before 503.
        package var tokenWait: Duration

        /// Every limit at zero: the config's reader sets each from its key.
        package init() {
            self.maxRequestBody = nil
            self.maxHeaderSize = 0
            self.clientIdleTimeout = .zero
            self.maxRequestLine = 0
            self.maxHeaderCount = 0
            self.maxConnections = 0
            self.refuseAtConnectionLimit = false
            self.headerTimeout = .zero
            self.bodyTimeout = .zero
            self.sendTimeout = .zero
            self.tokenWait = .zero
        }
    }
}
