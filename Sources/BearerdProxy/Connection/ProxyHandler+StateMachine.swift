import NIOCore

extension ProxyHandler {
    /// The client connection's lifecycle and the deadlines that belong to it (the idle wait
    /// between requests, the request head's `proxy.header_timeout`, the lingering close), as a
    /// value: each event changes the state and returns what the handler does next. Nothing here
    /// touches a channel or reads a clock; time comes in with the events, from the event loop.
    ///
    /// What happens inside an exchange belongs to its own machine (``ExchangeStateMachine``,
    /// its deadlines to ``ExchangeDeadlines``); this one only knows when one starts and ends. Generic over the
    /// exchange (`ExchangeRef`) so that tests drive it without a channel or an upstream.
    struct StateMachine<ExchangeRef: AnyObject> {
        enum State {
            /// Between requests since `since`; `head`: when the first bytes of the next request
            /// head came, while it is not complete.
            case idle(since: NIODeadline, head: NIODeadline?)
            case exchanging(ExchangeRef)
            /// bearerd answered the request itself at `since`; the rest of it is dropped until
            /// its end, and the connection then waits for the next one from `since`.
            case discarding(since: NIODeadline)
            /// The last response went out and the output is closed: what the client still sends is
            /// dropped until it closes, or until `until`.
            case lingering(until: NIODeadline)
            case closed
        }

        /// What the handler does when the connection's timer fires.
        enum TimerAction: Equatable {
            /// Nothing is due yet: fire again at this deadline.
            case arm(NIODeadline)
            /// The head did not complete within `proxy.header_timeout`: answer 408 and close.
            case answerHeadTimeout
            /// Idle past `proxy.client_idle_timeout`, or lingering long enough: close unanswered.
            case close
            /// An exchange runs: its own deadlines decide.
            case checkExchange
            case none
        }

        /// What the handler does when an exchange ends.
        enum EndAction: Equatable {
            /// The response is the connection's last: flush it, then linger.
            case closeAfterWrite
            /// The connection serves the next request; it may wait for it until the deadline.
            case keepOpen(idleUntil: NIODeadline)
        }

        /// What the handler does when asked to shut down gracefully.
        enum QuiesceAction {
            /// Idle: close now.
            case close
            /// Busy: this exchange's response is the connection's last.
            case lastExchange(ExchangeRef)
            case none
        }

        private(set) var state: State
        /// Graceful shutdown or a reload asked that the current exchange be the connection's last.
        private(set) var quiescing = false
        let headerTimeout: TimeAmount
        let idleTimeout: TimeAmount
        let lingerTime: TimeAmount

        /// Closed until ``accepted(now:)``: a connection that cannot be served is never opened.
        init(headerTimeout: TimeAmount, idleTimeout: TimeAmount, lingerTime: TimeAmount) {
            self.state = .closed
            self.headerTimeout = headerTimeout
            self.idleTimeout = idleTimeout
            self.lingerTime = lingerTime
        }

        /// The connection is served from `now`: idle until its first bytes. Returns when it must
        /// have sent them (a new connection waits for its first request as a kept-alive one does).
        mutating func accepted(now: NIODeadline) -> NIODeadline {
            self.state = .idle(since: now, head: nil)
            return now + self.idleTimeout
        }

        /// Whether an exchange holds the connection (or the end of an answered request is awaited),
        /// so that a pipelined request waits.
        var isBusy: Bool {
            switch self.state {
            case .exchanging, .discarding: true
            case .idle, .lingering, .closed: false
            }
        }

        /// Whether what the client sends is dropped unread: after the last response, or closed.
        var dropsInput: Bool {
            switch self.state {
            case .lingering, .closed: true
            case .idle, .exchanging, .discarding: false
            }
        }

        /// A read ended with bytes that are not a complete head yet: the head's clock starts at
        /// its first bytes. Returns the deadline to arm, once per head.
        mutating func headBytesWaiting(now: NIODeadline) -> NIODeadline? {
            guard case .idle(let since, nil) = self.state else { return nil }
            self.state = .idle(since: since, head: now)
            return now + self.headerTimeout
        }

        /// A request head was parsed: `exchange` now holds the connection. Returns whether its
        /// response must be the connection's last (a shutdown or a reload came first).
        mutating func begin(_ exchange: ExchangeRef) -> Bool {
            self.state = .exchanging(exchange)
            return self.quiescing
        }

        /// The current exchange ended at `now`; `close`: its machine decided the connection
        /// closes after it (the exchange is the one record of that: ``begin(_:)``, ``retire()``
        /// and ``quiesce()`` hand it a reload or a shutdown); `requestEnded`: the client's
        /// request came in whole (otherwise its rest is dropped).
        mutating func exchangeEnded(close: Bool, requestEnded: Bool, now: NIODeadline) -> EndAction {
            if close {
                self.state = .closed
                return .closeAfterWrite
            }
            self.state = requestEnded ? .idle(since: now, head: nil) : .discarding(since: now)
            return .keepOpen(idleUntil: now + self.idleTimeout)
        }

        /// The end of a request bearerd already answered arrived: the connection is idle again,
        /// still since the answer.
        mutating func discardedRequestEnded() {
            guard case .discarding(let since) = self.state else { return }
            self.state = .idle(since: since, head: nil)
        }

        /// The last response went out and the output closed at `now`. Returns the deadline after
        /// which the connection closes whatever the client does.
        mutating func lingerStarted(now: NIODeadline) -> NIODeadline {
            let until = now + self.lingerTime
            self.state = .lingering(until: until)
            return until
        }

        /// The connection closed, or left HTTP (an upgrade): nothing more is served.
        mutating func closed() {
            self.state = .closed
        }

        /// A reload: the next response is the connection's last, so the client comes back to the
        /// new settings. Returns the exchange whose response that is, if one runs.
        mutating func retire() -> ExchangeRef? {
            self.quiescing = true
            if case .exchanging(let exchange) = self.state { return exchange }
            return nil
        }

        /// Graceful shutdown: an idle connection closes now, a busy one after its response.
        mutating func quiesce() -> QuiesceAction {
            self.quiescing = true
            switch self.state {
            case .idle, .discarding:
                self.state = .closed
                return .close
            case .exchanging(let exchange):
                return .lastExchange(exchange)
            case .lingering, .closed:
                return .none
            }
        }

        /// The connection's timer fired at `now`.
        mutating func timerFired(now: NIODeadline) -> TimerAction {
            switch self.state {
            case .idle(_, let head?):
                let deadline = head + self.headerTimeout
                guard now >= deadline else { return .arm(deadline) }
                return .answerHeadTimeout
            case .idle(let since, nil), .discarding(let since):
                let deadline = since + self.idleTimeout
                guard now >= deadline else { return .arm(deadline) }
                self.state = .closed
                return .close
            case .exchanging:
                return .checkExchange
            case .lingering(let until):
                guard now >= until else { return .arm(until) }
                self.state = .closed
                return .close
            case .closed:
                return .none
            }
        }
    }
}
