import NIOCore

extension ProxyHandler {
    /// The client connection's lifecycle and the deadlines that belong to it (the idle wait
    /// between requests, the request head's `proxy.header_timeout`, the lingering close), as a
    /// value: each event changes the state and returns what the handler does next. Nothing here
    /// touches a channel or reads a clock; time comes in with the events, from the event loop.
    ///
    /// The exchange in flight is part of this machine: its state (``ExchangeStateMachine``, its
    /// deadlines ``ExchangeDeadlines``) is held here as a value, beside `.exchanging`'s reference
    /// to what it holds while it runs (``Exchange``: the request head, the upstream connection,
    /// the kept body), which tests make without a channel or an upstream. Its events go through
    /// ``withExchange(of:_:)``, which changes it in place and returns its action; when it ends,
    /// ``exchangeEnded(_:now:)`` reads its close decision and hands back its record.
    ///
    /// The value sits in ``exchange``, set by ``begin(_:_:)`` and cleared by every transition out
    /// of `.exchanging`, rather than in the case's payload: Swift cannot change an enum's payload
    /// in place, and each event copied it out and back (counted with `scripts/bench-count`:
    /// 23 more retains and as many releases per request, through the runtime's tuple witnesses).
    /// An optional stored property is changed in place.
    struct StateMachine {
        enum State {
            /// Between requests since `since`; `head`: when the first bytes of the next request
            /// head came, while it is not complete.
            case idle(since: NIODeadline, head: NIODeadline?)
            /// An exchange holds the connection: what it holds (its state is ``exchange``).
            case exchanging(Exchange)
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
            /// The response is the connection's last: flush it, then close. `linger`: half-close
            /// and drop what the client still sends first (``ProxyHandler/linger()``); not when the
            /// client asked to close and its request came whole, as nginx's `lingering_close on`
            /// decides: such a client sends nothing more (RFC 9112 §9.6), and the linger would cost
            /// each `curl` in a loop a shutdown, a wakeup, a read and a timer.
            case closeAfterWrite(linger: Bool)
            /// The connection serves the next request; it may wait for it until the deadline.
            case keepOpen(idleUntil: NIODeadline)
        }

        /// What the handler does when asked to shut down gracefully, or told of a reload.
        enum QuiesceAction {
            /// Idle: close now.
            case close
            /// A reload came while the exchange in flight had not been forwarded yet (it waits for
            /// a token or a connection): it would go out under the old settings, so it gets a 503
            /// that says to send it again, and the connection closes after it.
            case refuse(Exchange)
            /// Busy (the exchange's response is now the connection's last), or closing already.
            case none
        }

        private(set) var state: State {
            didSet {
                // The exchange's state lives exactly as long as `.exchanging`.
                switch self.state {
                case .exchanging: break
                case .idle, .discarding, .lingering, .closed: self.exchange = nil
                }
            }
        }
        /// The state of the exchange in flight: set with `.exchanging`, `nil` in every other state.
        private var exchange: ExchangeStateMachine?
        /// Graceful shutdown or a reload asked that the current exchange be the connection's last.
        private(set) var quiescing = false
        /// A reload replaced the settings this connection began with: nothing more is forwarded
        /// on it (a request that begins now gets 503 `reloaded`, a 401 is not retried).
        private(set) var reloaded = false
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

        /// A request head was parsed: the exchange now holds the connection. After a reload or
        /// a shutdown its response is the connection's last.
        mutating func begin(_ ref: Exchange, _ exchange: consuming ExchangeStateMachine) {
            // The handler begins one only when the connection is free (`isBusy`); the record of
            // one in flight would be lost unlogged.
            assert(self.exchange == nil, "an exchange began while another was in flight")
            if self.quiescing { exchange.closeAfter(.retiring) }
            self.state = .exchanging(ref)
            self.exchange = exchange
        }

        /// The exchange in flight, if one is: what it holds (its machine stays in place).
        var inFlight: Exchange? {
            if case .exchanging(let ref) = self.state { return ref }
            return nil
        }

        /// What `ref` holds is the exchange in flight.
        func isInFlight(_ ref: Exchange) -> Bool {
            if case .exchanging(let current) = self.state { return current === ref }
            return false
        }

        /// The exchange in flight's machine, read; `nil` when `ref` is not the one in flight.
        @inline(__always)
        func readExchange<Result>(of ref: Exchange, _ body: (borrowing ExchangeStateMachine) -> Result) -> Result? {
            guard self.isInFlight(ref), let exchange = self.exchange else { return nil }
            return body(exchange)
        }

        /// An event of the exchange in flight: its machine changes in place, and `body`'s result
        /// (the action the machine returned) comes back. `nil` when `ref` is not the exchange in
        /// flight (a late event of one that ended): nothing happens.
        mutating func withExchange<Result>(
            of ref: Exchange,
            _ body: (inout ExchangeStateMachine) -> Result
        ) -> Result? {
            guard self.isInFlight(ref), self.exchange != nil else { return nil }
            return body(&self.exchange!)
        }

        /// `ref`'s exchange, the one in flight, ended at `now`: its machine decided whether the connection
        /// closes after it (a reload or a shutdown told it so: ``begin(_:_:)``, ``retire()``,
        /// ``quiesce()``), and whether the client's request came in whole (otherwise its rest is
        /// dropped). Returns what the handler does, and the ended exchange's record for its log
        /// line; `nil` when `ref` is not the exchange in flight (nothing changes).
        mutating func exchangeEnded(
            _ ref: Exchange,
            now: NIODeadline
        ) -> (action: EndAction, ended: ExchangeStateMachine)? {
            guard self.isInFlight(ref), let exchange = self.exchange else { return nil }
            if exchange.closesConnection {
                self.state = .closed
                let done = exchange.closeReason == .clientAsked && exchange.requestEnded
                return (.closeAfterWrite(linger: !done), exchange)
            }
            self.state = exchange.requestEnded ? .idle(since: now, head: nil) : .discarding(since: now)
            return (.keepOpen(idleUntil: now + self.idleTimeout), exchange)
        }

        /// The end of a request bearerd already answered arrived: the connection is idle again,
        /// still since the answer. Returns whether it closes now instead (a reload or a shutdown
        /// came while the rest was being dropped).
        mutating func discardedRequestEnded() -> Bool {
            guard case .discarding(let since) = self.state else { return false }
            guard !self.quiescing else {
                self.state = .closed
                return true
            }
            self.state = .idle(since: since, head: nil)
            return false
        }

        /// The last response went out and the output closed at `now`. Returns the deadline after
        /// which the connection closes whatever the client does.
        mutating func lingerStarted(now: NIODeadline) -> NIODeadline {
            let until = now + self.lingerTime
            self.state = .lingering(until: until)
            return until
        }

        /// The connection closed, or left HTTP (an upgrade): nothing more is served. Returns the
        /// record of the exchange that was in flight, if one was.
        @discardableResult
        mutating func closed() -> ExchangeStateMachine? {
            let exchange = self.exchange
            self.state = .closed
            return exchange
        }

        /// A reload the connection cannot be handed over for (``ProxyHandler/takeOver(_:)``: the
        /// usual case), or whose new settings could not be had for it: no request goes upstream
        /// under the old settings from now on. An idle
        /// connection closes now (an HTTP/1.1 client sends an idempotent request again on a new
        /// connection when a kept-alive one closes); an exchange already forwarded ends, and the
        /// connection with it; one not forwarded yet is refused.
        /// A request whose head is arriving, or whose rest is being dropped, is let end: the one
        /// arriving is then refused (``reloaded``), the dropped one closes the connection.
        mutating func retire() -> QuiesceAction {
            self.reloaded = true
            self.quiescing = true
            switch self.state {
            case .idle(_, nil):
                self.state = .closed
                return .close
            case .idle(_, _?), .discarding, .lingering, .closed:
                return .none
            case .exchanging(let exchange):
                self.closeInFlightAfter(.retiring)
                switch self.exchange?.phase {
                case .waitingForToken?, .connecting?: return .refuse(exchange)
                case .forwarding?, .holding?, .finished?, nil: return .none
                }
            }
        }

        private mutating func closeInFlightAfter(_ reason: ExchangeStateMachine.CloseReason) {
            self.exchange?.closeAfter(reason)
        }

        /// Graceful shutdown: an idle connection closes now, a busy one after its response.
        mutating func quiesce() -> QuiesceAction {
            self.quiescing = true
            switch self.state {
            case .idle, .discarding:
                self.state = .closed
                return .close
            case .exchanging:
                self.closeInFlightAfter(.retiring)
                return .none
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
