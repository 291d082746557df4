import BearerdProxy
import Configuration
import Foundation

extension ProxyOptions.Limits {
    /// Reads and checks the limit keys, adding an issue to `builder` for each bad value.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Proxy
        self.init()
        self.maxRequestBody = builder.sizeOrUnlimited(Keys.maxRequestBody)
        self.maxHeaderSize = builder.size(Keys.maxHeaderSize)
        self.maxHeaderCount = builder.count(Keys.maxHeaderCount)
        self.maxRequestLine = builder.size(Keys.maxRequestLine)
        self.maxConnections = builder.count(Keys.maxConnections)
        self.refuseAtConnectionLimit = builder.choice(Keys.atConnectionLimit) == "refuse"
        self.clientIdleTimeout = builder.duration(Keys.clientIdleTimeout)
        self.headerTimeout = builder.duration(Keys.headerTimeout)
        self.bodyTimeout = builder.duration(Keys.bodyTimeout)
        self.sendTimeout = builder.duration(Keys.sendTimeout)
        self.tokenWait = builder.duration(Keys.tokenWait)
    }
}

extension ConfigKeys.Proxy {
    static let maxRequestBody = ConfigKeyDescriptor.text(
        "proxy.max_request_body",
        "a size like 10MiB, or unlimited",
        default: "",
        reload: .applies,
        doc: """
            Largest request body bearerd forwards, answered 413 beyond it; empty or "unlimited": no limit.
            Bodies are streamed, never held in memory, whatever their size.
            """
    )
    static let maxHeaderSize = ConfigKeyDescriptor(
        "proxy.max_header_size",
        .size(1024...(1 << 20)),
        default: "64KiB",
        reload: .applies,
        doc: "Largest total size of a request's headers (431 beyond it), from 1KiB to 1MiB."
    )
    static let maxHeaderCount = ConfigKeyDescriptor(
        "proxy.max_header_count",
        .count(1...10_000),
        default: "100",
        reload: .applies,
        doc: "Most header fields in one request (431 beyond it), from 1 to 10000."
    )
    static let maxRequestLine = ConfigKeyDescriptor(
        "proxy.max_request_line",
        .size(256...(1 << 20)),
        default: "8KiB",
        reload: .applies,
        doc: "Longest request target, the /path?query of the request line (414 beyond it), 256B to 1MiB."
    )
    static let maxConnections = ConfigKeyDescriptor(
        "proxy.max_connections",
        .count(1...Int.max),
        default: "512",
        reload: .applies,
        doc: """
            Open client connections, over all listeners. Beyond it bearerd stops accepting: new
            connections wait in the kernel's queue (up to 1024, then the kernel refuses them) until one
            closes. Each connection may hold an upstream connection too, so keep it under half the
            process's open-file limit (the unit sets LimitNOFILE=8192; a shell's is often 1024).
            """
    )
    static let atConnectionLimit = ConfigKeyDescriptor(
        "proxy.at_connection_limit",
        .choice(["wait", "refuse"]),
        default: "wait",
        reload: .applies,
        doc: """
            At max_connections: "wait" leaves new clients in the kernel's accept queue until a slot
            frees (their requests are served late, none is refused); "refuse" accepts them and answers
            503 with Retry-After at once, for clients that retry. Either way the metric
            bearerd_client_connections_waiting counts the clients queued, and a warning names the count
            every 30 s while the limit holds. Each listener may hold at most its share of the limit.
            """
    )
    static let clientIdleTimeout = ConfigKeyDescriptor.duration(
        "proxy.client_idle_timeout",
        default: "60s",
        within: .milliseconds(100)...(.seconds(86_400)),
        reload: .applies,
        doc: """
            A client connection with no request in flight (a new one included) is closed after this
            long, without an answer.
            """
    )
    static let headerTimeout = ConfigKeyDescriptor.duration(
        "proxy.header_timeout",
        default: "10s",
        within: .milliseconds(100)...(.seconds(3600)),
        reload: .applies,
        doc: """
            Slow clients (slowloris): a request's head must be complete within header_timeout of its
            first byte, and a request body may not pause longer than body_timeout while bearerd reads it
            (pauses bearerd makes, waiting for the upstream, do not count). Otherwise the answer is 408
            and the connection is closed. body_timeout, send_timeout and upstream.read_timeout fire
            between one and 1.25 times their value after the last byte moved.
            """
    )
    static let bodyTimeout = ConfigKeyDescriptor.duration(
        "proxy.body_timeout",
        default: "30s",
        within: .milliseconds(100)...(.seconds(86_400)),
        reload: .applies,
        doc: ""
    )
    static let sendTimeout = ConfigKeyDescriptor.duration(
        "proxy.send_timeout",
        default: "60s",
        within: .milliseconds(100)...(.seconds(86_400)),
        reload: .applies,
        doc: """
            A client that stops reading its response for this long (as nginx's send_timeout; at most a
            quarter more) is disconnected, and the upstream connection with it, so it cannot hold
            either forever.
            """
    )
    static let tokenWait = ConfigKeyDescriptor.duration(
        "proxy.token_wait",
        default: "2s",
        within: .milliseconds(10)...(.seconds(300)),
        reload: .applies,
        doc: """
            A request that needs a token being refreshed waits at most this long, then gets 503 with a
            Retry-After saying when bearerd tries the token server next (the refresh goes on for the
            requests after it). While the token server is down, answers therefore never take longer.
            """
    )
}
