import Foundation
import Tracing

/// `tracing.endpoint`: a span per token refresh (grant, reason, result, the token server's time,
/// the fleet's lock wait), linked to the requests that waited for it. Never a token: the result
/// is the engine's own words (`ok`, `rejected (CODE)`, `failed: WHY`).
extension TokenManager {
    /// The most requests one refresh span links to.
    static let mostLinks = 64

    /// Records the request asking now (its span, from the task's service context) as one that
    /// waits for the refresh in flight or about to start.
    func noteWaiter() {
        guard self.tracer != nil, let context = ServiceContext.current, self.refreshWaiters.count < Self.mostLinks
        else { return }
        self.refreshWaiters.append(context)
    }

    /// Starts the span of a refresh `start` begins.
    func startRefreshSpan(grant: String, reason: String) {
        guard let tracer = self.tracer else { return }
        self.refreshSpan?.end()
        let span = tracer.startAnySpan("token refresh", context: .topLevel, ofKind: .client)
        span.attributes["bearerd.grant"] = grant
        span.attributes["bearerd.reason"] = reason
        self.refreshSpan = span
        self.refreshSpanStarted = ContinuousClock.now
    }

    /// The fleet's lock is held: how long it took.
    func refreshLockTaken() {
        guard let span = self.refreshSpan, let started = self.refreshSpanStarted else { return }
        span.attributes["bearerd.fleet.lock_wait_ms"] = Self.milliseconds(ContinuousClock.now - started)
    }

    /// The token server answered (or did not) after `duration`.
    func refreshAnswered(after duration: Duration, grant: String) {
        self.refreshSpanAnswered = true
        self.refreshSpan?.attributes["bearerd.server_ms"] = Self.milliseconds(duration)
        self.refreshSpan?.attributes["bearerd.grant"] = grant
    }

    /// Ends the refresh's span with its result, linked to every request that waited for it.
    func endRefreshSpan(_ result: ExchangeResult) {
        guard let span = self.refreshSpan else { return }
        self.refreshSpan = nil
        // Without a token request (a fleet host adopted the row, the store failed), the last
        // refresh's result is not this one's.
        let said: String
        switch (self.refreshSpanAnswered, result) {
        case (true, _): said = self.lastRefresh?.result ?? ""
        case (false, .issued): said = "adopted from the fleet"
        case (false, .failed(let why)): said = "failed: \(why)"
        }
        self.refreshSpanAnswered = false
        let outcome = String(said.prefix(200))
        span.attributes["bearerd.result"] = outcome
        if case .failed = result { span.setStatus(SpanStatus(code: .error, message: String(outcome.prefix(120)))) }
        for waiter in self.refreshWaiters {
            span.addLink(SpanLink(context: waiter, attributes: [:]))
        }
        self.refreshWaiters.removeAll()
        span.end()
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }
}
