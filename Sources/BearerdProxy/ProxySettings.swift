import BearerdAuth
import BearerdFiles
import BearerdSockets
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL

/// What the data path needs from the configuration, converted once to NIO's types.
package struct ProxySettings: Sendable {
    /// `proxy.*`, as configured: limits, timeouts, guards, lists and what passes upstream.
    package var proxy: ProxyOptions
    /// `upstream.*`, as configured: the API, its TLS names and its timeouts.
    package var upstream: UpstreamOptions
    /// `listen`, `allow_remote`, `socket_mode`, `socket_group` and `shutdown_grace`: where the
    /// proxy listens, and how long it drains.
    package var listeners: ListenerOptions
    /// TLS for an https upstream (and its client certificate); `nil` for http.
    package var tls: UpstreamTLS?
    /// The three limits a request head is parsed under.
    package var requestLimits: RequestLimits {
        RequestLimits(
            maxRequestLine: self.proxy.limits.maxRequestLine,
            maxHeaderSize: self.proxy.limits.maxHeaderSize,
            maxHeaderCount: self.proxy.limits.maxHeaderCount
        )
    }
    /// The most bytes of request bodies kept for retries over all connections at once; beyond
    /// it a request is forwarded without a copy, and a 401 to it passes to the client.
    package static let retryBufferTotal = 32 << 20
    /// The DNS-rebinding guard (`proxy.rebinding_guard`), or `nil` when it is off.
    var hostGuard: HostGuard?
    /// The shared secret TCP callers must send in `clientKeyHeader` (`proxy.client_key_file`).
    var clientKey: ClientKey?
    /// Which methods and paths may be forwarded (`proxy.allow_*` / `proxy.deny_*`).
    var access: AccessLists
    /// `tracing.endpoint`: the tracer, set by the daemon once it started the exporter; `nil` when
    /// tracing is off.
    package var tracing: ProxyTracing?
    /// `socket_allow_uids`, `socket_allow_gids` and `socket_allow_any_user`: who may use every
    /// listener.
    var admission: CallerAdmission
    /// `auth.dpop`: DPoP-bound tokens and their proofs; set by the daemon, kept across reloads.
    package var dpop: DPoPUpstream?
    /// `scheme://host[:port]` and the base path of the upstream: the start of each proof's `htu`.
    let htuPrefix: String
    /// Whether to log one line per request.
    package var accessLog: Bool
    /// The daemon's batched writer of those lines; `nil`: they go through the connection's
    /// logger (tests). Set by the daemon, kept across reloads, which reopen its file.
    package var accessLines: AccessLog?
    /// Whether access lines include the query string.
    package var accessLogQuery: Bool
    /// The session's name in a config with `sessions:`: on its access lines (`session=`), its
    /// metrics (`session="NAME"`) and its spans. `nil` for a config without `sessions:`.
    package var session: String?

    /// Derives the settings from the validated sections (BearerdConfig's
    /// `ProxySettings(configuration:)` passes them).
    /// - Throws: ``ProxyError`` when the TLS configuration cannot be built (for example an unreadable CA file).
    package init(
        proxy: ProxyOptions,
        upstream: UpstreamOptions,
        listeners: ListenerOptions,
        callers: CallerAdmission,
        accessLog: Bool,
        accessLogQuery: Bool
    ) throws {
        self.proxy = proxy
        self.upstream = upstream
        self.listeners = listeners
        self.htuPrefix = "\(upstream.target.scheme.rawValue)://\(upstream.target.hostHeader)\(upstream.target.basePath)"
        if upstream.target.scheme == .https {
            var tls = TLSConfiguration.makeClientConfiguration()
            if let caFile = upstream.caFile {
                do {
                    // Through a checked directory: a FIFO in its place is refused, not waited on.
                    guard let pem = try CheckedDirectory.read(file: caFile, limit: 4 << 20)?.bytes else {
                        throw ProxyError.setup("upstream.ca_file: \(caFile) does not exist")
                    }
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pem))
                } catch let error as ProxyError {
                    throw error
                } catch let error as FileCheckError {
                    throw ProxyError.setup("upstream.ca_file: cannot read \(caFile): \(error)", underlying: error)
                } catch {
                    throw ProxyError.setup(
                        "upstream.ca_file: \(caFile) holds no PEM certificate bearerd can read (\(error))"
                    )
                }
            }
            self.tls = try UpstreamTLS(
                base: tls,
                certificate: upstream.clientCertificate,
                logger: Logger(label: "bearerd")
            )
        } else {
            self.tls = nil
        }
        self.hostGuard = proxy.rebindingGuard ? HostGuard(allowedHosts: proxy.allowedHosts) : nil
        self.access = AccessLists(proxy)
        self.admission = callers
        self.clientKey = try proxy.clientKeyFile.map { try ClientKey(file: $0, header: proxy.clientKeyHeader) }
        self.accessLog = accessLog
        self.accessLogQuery = accessLogQuery
    }
}

extension ProxySettings {
    /// One generation's settings, shared by reference: each connection holds this rather than a
    /// copy of the struct, whose copy retained each of its ~25 reference-counted fields once per
    /// connection and released them again when it closed.
    package final class Shared: Sendable {
        package let value: ProxySettings

        package init(_ value: ProxySettings) {
            self.value = value
        }
    }
}
