import Foundation
import Tracing

/// `tracing.endpoint`: a span per token refresh (grant, reason, result, the token server's time,
/// the fleet's lock wait), linked to the requests that waited for it. Never a token: the result
/// is the engine's own words (`ok`, `rejected (CODE)`, `failed: WHY`).
/// The span of the refresh in flight, and the requests that wait for it.
struct RefreshTrace {
    var span: (any Span)?
    var started: ContinuousClock.Instant?
    /// Whether the token server was asked (a fleet host may adopt the row instead).
    var answered = false
    var waiters: [ServiceContext] = []
}

extension TokenManager {
    /// The most requests one refresh span links to.
    static let mostLinks = 64

    /// Records the request asking now (its span, from the task's service context) as one that
    /// waits for the refresh in flight or about to start.
    func noteWaiter() {
        guard self.tracer != nil, let context = ServiceContext.current, self.trace.waiters.count < Self.mostLinks
        else { return }
        self.trace.waiters.append(context)
    }

    /// Starts the span of a refresh `start` begins.
    func startRefreshSpan(grant: String, reason: String) {
        guard let tracer = self.tracer else { return }
        self.trace.span?.end()
        let span = tracer.startAnySpan("token refresh", context: .topLevel, ofKind: .client)
        span.attributes["bearerd.grant"] = grant
        span.attributes["bearerd.reason"] = reason
        self.trace.span = span
        self.trace.started = ContinuousClock.now
    }

    /// The fleet's lock is held: how long it took.
    func refreshLockTaken() {
        guard let span = self.trace.span, let started = self.trace.started else { return }
        span.attributes["bearerd.fleet.lock_wait_ms"] = Self.milliseconds(ContinuousClock.now - started)
    }

    /// The token server answered (or did not) after `duration`.
    func refreshAnswered(after duration: Duration, grant: String) {
        self.trace.answered = true
        self.trace.span?.attributes["bearerd.server_ms"] = Self.milliseconds(duration)
        self.trace.span?.attributes["bearerd.grant"] = grant
    }

    /// Ends the refresh's span with its result, linked to every request that waited for it.
    func endRefreshSpan(_ result: AttemptResult) {
        guard let span = self.trace.span else { return }
        self.trace.span = nil
        // Without a token request (a fleet host adopted the row, the store failed), the last
        // refresh's result is not this one's.
        let said: String
        switch (self.trace.answered, result) {
        case (true, _): said = self.lastRefresh?.result ?? ""
        case (false, .issued): said = "adopted from the fleet"
        case (false, .failed(let why)): said = "failed: \(why)"
        }
        self.trace.answered = false
        let outcome = String(said.prefix(200))
        span.attributes["bearerd.result"] = outcome
        if case .failed = result { span.setStatus(SpanStatus(code: .error, message: String(outcome.prefix(120)))) }
        for waiter in self.trace.waiters {
            span.addLink(SpanLink(context: waiter, attributes: [:]))
        }
        self.trace.waiters.removeAll()
        span.end()
    }

    static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1e3 + Double(duration.components.attoseconds) / 1e15
    }
}
