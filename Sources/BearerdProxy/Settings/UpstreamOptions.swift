import BearerdFiles
import BearerdWire

/// `upstream.*`: the API bearerd forwards to, as configured. The config reads it
/// (`BearerdConfiguration+Upstream.swift`, where each key is declared).
package struct UpstreamOptions: Sendable {
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

    /// `target` with no TLS options and every timeout at zero: the config's reader sets each
    /// from its key.
    package init(target: UpstreamTarget) {
        self.target = target
        self.connectTimeout = .zero
        self.responseTimeout = .zero
        self.idleTimeout = .zero
        self.readTimeout = .zero
        self.maxIdleConnections = 0
    }
}
