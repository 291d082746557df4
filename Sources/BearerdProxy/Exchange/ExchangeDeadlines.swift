import NIOCore

/// One exchange's own deadlines, as a value: whether the request body keeps coming
/// (`proxy.body_timeout`), whether the upstream's response head comes in time
/// (`upstream.response_timeout`), and whether the response keeps moving once it has begun
/// (`proxy.send_timeout` while the client does not read, `upstream.read_timeout` while the
/// upstream sends nothing). Events take the time from the event loop; ``check(now:_:)`` says
/// what is due or when to look again. Nothing here touches a channel or reads a clock.
///
/// Progress is checked a few times per timeout rather than timed per read, so the data path
/// pays nothing per byte: each check that finds new bytes moves the stall's start to its own
/// time, and one that finds none for a whole timeout since then expires. A stall is therefore
/// caught between one timeout and one timeout plus a check interval (a quarter of it) after the
/// last byte moved, never two or three timeouts later.
struct ExchangeDeadlines {
    /// The timeouts of the settings in force when the exchange began.
    struct Timeouts: Equatable {
        var body: TimeAmount
        var response: TimeAmount
        var send: TimeAmount
        var read: TimeAmount

        /// How often a response in progress is checked: a quarter of the shorter of its two
        /// timeouts.
        var progressInterval: TimeAmount { Self.interval(min(self.send, self.read)) }
        /// How often a request body is checked.
        var bodyInterval: TimeAmount { Self.interval(self.body) }

        /// A quarter of `timeout` (at least a millisecond): a stall ends within 1.25 timeouts.
        static func interval(_ timeout: TimeAmount) -> TimeAmount {
            max(.nanoseconds(timeout.nanoseconds / Self.checksPerTimeout), .milliseconds(1))
        }

        static let checksPerTimeout: Int64 = 4
    }

    /// What the exchange looks like when its timer fires.
    struct Snapshot {
        /// Request body bytes read so far, and whether the request is complete.
        var requestBodyBytes: Int
        var requestEnded: Bool
        /// Whether bearerd holds client reads back right now (it is then not the client's fault).
        var readsHeld: Bool
        /// Response body bytes sent so far.
        var responseBodyBytes: Int
        /// Whether the client can take more bytes now.
        var clientWritable: Bool
    }

    /// What ends the exchange.
    enum Expiry: Equatable {
        /// The body paused past `proxy.body_timeout`: answer 408, close after it.
        case requestBodyStalled
        /// No response head within `upstream.response_timeout`: answer 504.
        case responseHeadLate
        /// The response began and the client read nothing within `proxy.send_timeout`.
        case clientStalled
        /// The response began and the upstream sent nothing more within `upstream.read_timeout`.
        case upstreamStalled
    }

    /// What the handler does when the exchange's timer fires.
    enum Check: Equatable {
        case expired(Expiry)
        /// Nothing is due: look again at this time.
        case arm(NIODeadline)
        /// No deadline runs.
        case none
    }

    private struct Progress {
        var checkAt: NIODeadline
        var bytes: Int
        /// The last check that found bytes moved (or the start): the stall, if any, began after.
        var movedAt: NIODeadline
    }

    let timeouts: Timeouts
    /// When the body is next checked, and the bytes and held reads it had at the last check.
    private var body: Progress?
    private var bodyReadsHeld = false
    /// When the response head must have arrived; set when the request has been sent.
    private(set) var responseHeadDue: NIODeadline?
    /// When the response is next checked, after its head went to the client.
    private var response: Progress?

    init(timeouts: Timeouts) {
        self.timeouts = timeouts
    }

    /// Whether the request body is watched already (its first check is set).
    var watchesBody: Bool { self.body != nil }

    /// A read ended while the request body is still to come: the first body check is
    /// `body_timeout` from now. Returns it the first time only.
    mutating func bodyArriving(now: NIODeadline) -> NIODeadline? {
        guard self.body == nil else { return nil }
        let check = now + self.timeouts.bodyInterval
        self.body = Progress(checkAt: check, bytes: 0, movedAt: now)
        return check
    }

    /// bearerd held client reads back (the upstream could not take more): a body check that
    /// finds no progress since then does not blame the client.
    mutating func readsWereHeld() {
        self.bodyReadsHeld = true
    }

    /// The request went upstream whole at `sent`: its response head is due `response_timeout`
    /// later. Returns that deadline, unless one already runs.
    mutating func requestSent(at sent: NIODeadline) -> NIODeadline? {
        guard self.responseHeadDue == nil else { return nil }
        let due = sent + self.timeouts.response
        self.responseHeadDue = due
        return due
    }

    /// A response head came from the upstream, or the upstream connection went away: it is no
    /// longer waited for (a replay or a retry sends the request again, and waits again).
    mutating func stopWaitingForResponseHead() {
        self.responseHeadDue = nil
    }

    /// The response head went to the client at `now`: the response must keep moving from here.
    mutating func responseStarted(now: NIODeadline) -> NIODeadline {
        self.responseHeadDue = nil
        let check = now + self.timeouts.progressInterval
        self.response = Progress(checkAt: check, bytes: 0, movedAt: now)
        return check
    }

    /// The timer fired at `now`: what has expired, else when to look again.
    mutating func check(now: NIODeadline, _ exchange: Snapshot) -> Check {
        var next: NIODeadline?
        func later(_ deadline: NIODeadline) { next = min(next ?? deadline, deadline) }

        if var body = self.body, !exchange.requestEnded {
            if now >= body.checkAt {
                if exchange.requestBodyBytes != body.bytes || self.bodyReadsHeld || exchange.readsHeld {
                    // Bytes came, or bearerd held reads back (then it is not the client's fault).
                    body.bytes = exchange.requestBodyBytes
                    body.movedAt = now
                } else if now - body.movedAt >= self.timeouts.body {
                    return .expired(.requestBodyStalled)
                }
                body.checkAt = now + self.timeouts.bodyInterval
                self.bodyReadsHeld = exchange.readsHeld
                self.body = body
            }
            later(body.checkAt)
        }
        if var response = self.response {
            if now >= response.checkAt {
                if let expiry = self.responseStalled(&response, now: now, exchange) { return .expired(expiry) }
                response.checkAt = now + self.timeouts.progressInterval
                self.response = response
            }
            later(response.checkAt)
        }
        if let due = self.responseHeadDue {
            if now >= due { return .expired(.responseHeadLate) }
            later(due)
        }
        return next.map { .arm($0) } ?? .none
    }

    /// Whether the response made no progress for longer than its timeout allows.
    private func responseStalled(_ progress: inout Progress, now: NIODeadline, _ exchange: Snapshot) -> Expiry? {
        guard exchange.responseBodyBytes == progress.bytes else {
            progress.bytes = exchange.responseBodyBytes
            progress.movedAt = now
            return nil
        }
        let limit = exchange.clientWritable ? self.timeouts.read : self.timeouts.send
        guard now - progress.movedAt >= limit else { return nil }
        return exchange.clientWritable ? .upstreamStalled : .clientStalled
    }
}
