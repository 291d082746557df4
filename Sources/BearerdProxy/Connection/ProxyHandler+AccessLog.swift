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
        // An info line, as when it went through the logger: `log.level: warning` quiets it too.
        guard self.settings.accessLog, self.logger.logLevel <= .info else { return }
        var record = AccessRecord(
            method: exchange.request.method.rawValue,
            path: self.loggedPath(exchange.request.uri),
            status: status ?? 0,
            bytesIn: ended.requestBodyBytes,
            bytesOut: ended.responseBodyBytes,
            duration: (now - exchange.startedAt).nanoseconds / 100_000,
            upstream: exchange.upstreamStartedAt.map { (now - $0).nanoseconds / 100_000 },
            traceID: traceID,
            outcome: outcome
        )
        if let caller = self.caller {
            record.callerUID = caller.uid
            record.callerPID = caller.pid
            if let executable = caller.executable {
                record.callerExecutable = executable
                // Read at the accept: said when that was a while ago, and it may be stale.
                record.callerExecutableAge = caller.executableAge(now: now)
            }
        }
        if ended.replayed { record.retried = "stale_connection" }
        record.session = self.settings.session
        if ended.authRetry.retried { record.retried = ended.heldForScope ? "upstream_403_scope" : "upstream_401" }
        if let accessLog = self.settings.accessLines {
            accessLog.write(record)
        } else {
            self.logger.info("request", metadata: record.metadata)
        }
    }

    private func loggedPath(_ uri: String) -> String {
        // A target that is not origin-form was refused; it may name a host with user:password@.
        guard uri.utf8.first == UInt8(ascii: "/") else { return "(refused target)" }
        if self.settings.accessLogQuery { return uri }
        guard let query = uri.firstIndex(of: "?") else { return uri }
        return String(uri[..<query])
    }
}
