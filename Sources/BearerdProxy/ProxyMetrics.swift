import Metrics
import NIOCore
import Synchronization

/// The proxy's metrics (swift-metrics; the daemon exports them to Prometheus). Each series is
/// made once: looking one up per request would cost more than counting.
package final class ProxyMetrics: Sendable {
    /// `bearerd_requests_total{class="1xx"…"5xx"}`; index 0 counts exchanges with no status
    /// (the client left before an answer).
    private let requests: [Counter]
    private let inFlight: Meter
    private let upstreamDuration: Metrics.Timer
    private let bytesIn: Counter
    private let bytesOut: Counter
    private let retries: Counter
    private let connections: Meter
    /// Clients in the listeners' accept queues while `proxy.max_connections` is reached.
    private let waiting: Meter
    /// Connections answered 503 at the limit (`proxy.at_connection_limit: refuse`).
    private let refused: Counter

    /// `bearerd_caller_requests_total{uid}` by caller, at most ``mostCallers`` uids (the rest
    /// as `other`), and `bearerd_callers_refused_total`.
    private let callers = Mutex<[UInt32: Counter]>([:])
    private let otherCallers: Counter
    private let callersRefused: Counter
    /// `session="NAME"` on every series, in a config with `sessions:`.
    private let session: [(String, String)]
    static let mostCallers = 64

    /// `session`: the session's name in a config with `sessions:` (a label of every series).
    package init(session: String? = nil) {
        let session = session.map { [("session", $0)] } ?? []
        self.session = session
        self.requests = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"].map {
            Counter(label: "bearerd_requests_total", dimensions: [("class", $0)] + session)
        }
        self.inFlight = Meter(label: "bearerd_requests_in_flight", dimensions: session)
        self.upstreamDuration = Metrics.Timer(label: "bearerd_upstream_duration_seconds", dimensions: session)
        self.bytesIn = Counter(label: "bearerd_request_body_bytes_total", dimensions: session)
        self.bytesOut = Counter(label: "bearerd_response_body_bytes_total", dimensions: session)
        self.retries = Counter(label: "bearerd_upstream_401_retries_total", dimensions: session)
        self.connections = Meter(label: "bearerd_client_connections", dimensions: session)
        self.waiting = Meter(label: "bearerd_client_connections_waiting", dimensions: session)
        self.refused = Counter(label: "bearerd_client_connections_refused_total", dimensions: session)
        self.otherCallers = Counter(label: "bearerd_caller_requests_total", dimensions: [("uid", "other")] + session)
        self.callersRefused = Counter(label: "bearerd_callers_refused_total", dimensions: session)
    }

    func started() {
        self.inFlight.increment()
    }

    func retried() {
        self.retries.increment()
    }

    func connectionOpened() {
        self.connections.increment()
    }

    func connectionClosed() {
        self.connections.decrement()
    }

    func waitingClients(_ count: Int) {
        self.waiting.set(count)
    }

    /// The request counter of a caller's uid, made once per uid.
    func callerRequests(uid: UInt32) -> Counter {
        self.callers.withLock { callers in
            if let counter = callers[uid] { return counter }
            guard callers.count < Self.mostCallers else { return self.otherCallers }
            let counter = Counter(
                label: "bearerd_caller_requests_total",
                dimensions: [("uid", String(uid))] + self.session
            )
            callers[uid] = counter
            return counter
        }
    }

    func callerRefused() {
        self.callersRefused.increment()
    }

    func connectionRefused() {
        self.refused.increment()
    }

    /// Counts a finished exchange; `upstream` is how long the upstream took, when it was asked.
    func finished(status: Int?, bytesIn: Int, bytesOut: Int, upstream: TimeAmount?) {
        self.inFlight.decrement()
        let index = status.map { (100..<600).contains($0) ? $0 / 100 : 0 } ?? 0
        self.requests[index].increment()
        if bytesIn > 0 { self.bytesIn.increment(by: bytesIn) }
        if bytesOut > 0 { self.bytesOut.increment(by: bytesOut) }
        if let upstream { self.upstreamDuration.recordNanoseconds(upstream.nanoseconds) }
    }
}
