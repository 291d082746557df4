import BearerdAuth
import BearerdWire
import Logging
import Metrics
import NIOCore
import NIOHTTP1

extension ProxyHandler {
    /// Counts the finished exchange in the metrics, then writes one line: method, path (without
    /// the query unless `log.access_query`), status, body bytes each way, total and upstream
    /// time. Headers are never logged. Called exactly once per exchange, with the record its
    /// machine left as it ended (`ended`); `now` when the caller has just read the clock.
    func logAccess(
        _ exchange: Exchange,
        _ ended: borrowing ExchangeStateMachine,
        outcome: String?,
        now: NIODeadline? = nil
    ) {
        let now = now ?? self.now
        let status = ended.response?.status
        self.metrics.finished(
            status: status,
            bytesIn: ended.requestBodyBytes,
            bytesOut: ended.responseBodyBytes,
            upstream: exchange.upstreamStartedAt.map { now - $0 }
        )
        self.caller?.requests.increment()
        let traceID = exchange.trace?.traceID
        if var trace = exchange.trace {
            if trace.tokenWait == nil, let started = trace.tokenWaitStarted { trace.tokenWait = now - started }
            trace.end(
                status: status,
                upstream: exchange.upstreamStartedAt.map { now - $0 },
                retriedAfter401: ended.authRetry.retried
            )
            exchange.trace = nil
        }
        guard self.settings.accessLog else { return }
        var metadata: Logger.Metadata = [
            "method": .string(exchange.request.method.rawValue),
            "path": .string(self.loggedPath(exchange.request.uri)),
            "status": .stringConvertible(status ?? 0),
            "bytes_in": .stringConvertible(ended.requestBodyBytes),
            "bytes_out": .stringConvertible(ended.responseBodyBytes),
            "duration_ms": .string(Self.milliseconds(now - exchange.startedAt)),
        ]
        if let upstreamStartedAt = exchange.upstreamStartedAt {
            metadata["upstream_ms"] = .string(Self.milliseconds(now - upstreamStartedAt))
        }
        if let caller = self.caller {
            metadata["caller_uid"] = .stringConvertible(caller.uid)
            if let pid = caller.pid { metadata["caller_pid"] = .stringConvertible(pid) }
            if let executable = caller.executable {
                metadata["caller_exe"] = .string(executable)
                // Read at the accept: said when that was a while ago, and it may be stale.
                if let age = caller.executableAge(now: now) { metadata["caller_exe_age_s"] = .stringConvertible(age) }
            }
        }
        if let traceID { metadata["trace_id"] = .string(traceID) }
        if let outcome { metadata["outcome"] = .string(outcome) }
        if ended.replayed { metadata["retried"] = "stale_connection" }
        if ended.authRetry.retried { metadata["retried"] = ended.heldForScope ? "upstream_403_scope" : "upstream_401" }
        self.logger.info("request", metadata: metadata)
    }

    private func loggedPath(_ uri: String) -> String {
        // A target that is not origin-form was refused; it may name a host with user:password@.
        guard uri.utf8.first == UInt8(ascii: "/") else { return "(refused target)" }
        if self.settings.accessLogQuery { return uri }
        guard let query = uri.firstIndex(of: "?") else { return uri }
        return String(uri[..<query])
    }

    private static func milliseconds(_ amount: TimeAmount) -> String {
        let tenths = amount.nanoseconds / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
