import BearerdAuth
import BearerdFiles
import BearerdProxy
import BearerdWire
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension BearerdConfiguration {
    /// `upstream.*`: ``UpstreamOptions``, owned by the proxy.
    package typealias Upstream = UpstreamOptions
}

extension UpstreamOptions {
    /// Reads and checks every `upstream.*` key; `nil` when the URL is missing or invalid (an
    /// issue on `builder` says so).
    init?(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Upstream
        guard let text = builder.string(Keys.url) else {
            builder.issue("upstream.url", "required: the http or https URL of the API to forward to")
            return nil
        }
        let target: UpstreamTarget
        switch UpstreamTarget.parse(text) {
        case .refused(let reason):
            builder.issue("upstream.url", reason)
            return nil
        case .parsed(let parsed):
            target = parsed
        }
        let caFile = builder.string(Keys.caFile).map(builder.resolve)
        let serverName = builder.string(Keys.serverName)
        if target.scheme == .http,
            let refusal = PlainHTTP.refusal(url: target.description, allowInsecure: builder.allowInsecureHTTP)
        {
            builder.issue("upstream.url", refusal)
        }
        let clientCertificate = builder.clientCertificate(
            certificate: "upstream.client_cert_file",
            key: "upstream.client_key_file"
        )
        if target.scheme == .http {
            if clientCertificate != nil {
                builder.issue("upstream.client_cert_file", "only applies to an https upstream")
            }
            if caFile != nil { builder.issue("upstream.ca_file", "only applies to an https upstream") }
            if serverName != nil { builder.issue("upstream.server_name", "only applies to an https upstream") }
        }
        if let caFile, builder.unreadable(caFile) {
            builder.issue("upstream.ca_file", "cannot read \(caFile): check that it exists and bearerd may read it")
        }
        if let serverName, serverName.isEmpty || serverName.contains(where: { $0 == " " || $0 == "/" || $0 == ":" }) {
            builder.issue("upstream.server_name", "must be a DNS name (got \"\(serverName)\")")
        }
        self.init(target: target)
        self.caFile = caFile
        self.serverName = serverName
        self.clientCertificate = clientCertificate
        self.connectTimeout = builder.duration(Keys.connectTimeout)
        self.responseTimeout = builder.duration(Keys.responseTimeout)
        self.idleTimeout = builder.duration(Keys.idleTimeout)
        self.readTimeout = builder.duration(Keys.readTimeout)
        self.maxIdleConnections = builder.count(Keys.maxIdleConnections)
    }
}

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
                more (as nginx's proxy_read_timeout; at most a quarter more). Then both connections are
                closed. Raise it for event streams that stay quiet longer.
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
