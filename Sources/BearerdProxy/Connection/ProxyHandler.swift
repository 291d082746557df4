import BearerdAuth
import BearerdLogging
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1
import Tracing

/// Serves one client connection: parses the bytes it sends (``RequestParser``), checks each
/// request, gets a token, forwards the request to a pooled upstream connection and streams the
/// response back.
///
/// Backpressure runs both ways: client reads stop while the upstream connection cannot take more
/// bytes (or is not attached yet), and upstream reads stop while the client cannot take more
/// (see ``UpstreamConnection``). Nothing is buffered beyond one read per direction.
final class ProxyHandler: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The generation's settings, shared with its other connections.
    let shared: ProxySettings.Shared
    /// Read in place through the shared box (a borrow, not a copy of the struct).
    var settings: ProxySettings {
        _read { yield self.shared.value }
    }
    /// Bytes of request bodies kept for retries, over every connection of the generation.
    let retryBudget: SharedBudget
    /// The connection came in on a TCP listener (known from the listener, never guessed from
    /// the peer address, which a reset connection no longer has).
    let viaTCP: Bool
    let pool: UpstreamConnectionPool
    let tokens: any TokenProvider
    /// The provider's answers this connection waits for, counted for shutdown.
    let calls: ProviderCalls
    let logger: Logger
    /// What a client, the upstream or the token server can cause at request rate is logged
    /// through this, shared by every connection: once per kind, then summarised.
    let failures: ThrottledLogger
    /// The connection's lifecycle and its idle, head and linger deadlines
    /// (``ProxyHandler/StateMachine``); the exchange in flight, its state included, is its
    /// `.exchanging` case.
    var machine: StateMachine
    var state: StateMachine.State { self.machine.state }

    /// An event of `exchange`: its machine, held by the connection's, changes in place and says
    /// what to do. `nil` when `exchange` is no longer the one in flight: nothing happens. (`body`
    /// must not touch `self.machine`: the closure runs inside its access.)
    @discardableResult
    func update<Result>(_ exchange: Exchange, _ body: (inout ExchangeStateMachine) -> Result) -> Result? {
        self.machine.withExchange(of: exchange, body)
    }

    /// A fact of `exchange`'s machine; `nil` when it is no longer the one in flight.
    func read<Result>(_ exchange: Exchange, _ body: (borrowing ExchangeStateMachine) -> Result) -> Result? {
        self.machine.readExchange(of: exchange, body)
    }
    var context: ChannelHandlerContext?
    var readPending = false
    /// What the client sent that is not parsed yet: a head still arriving, or requests pipelined
    /// behind the one in flight, parsed when it ends. Reads stop while a pipelined request
    /// waits, so at most one read's worth is held.
    var inbound = WireFormat.empty
    var parser: RequestParser
    /// Inside `parseInbound`: a request that ends while it runs does not start another pass.
    var parsing = false
    /// The buffers the upstream request heads and the client response heads are written into.
    var upstreamHeads = RecycledBuffer()
    var clientHeads = RecycledBuffer()
    /// The response head, written with the first piece of body when that piece is small (one
    /// write and one iovec instead of two), or before anything else goes to the client.
    var heldHead: ByteBuffer?
    /// How long a lingering connection waits for the client to close.
    static let lingerTime = TimeAmount.seconds(2)
    /// Inside a read loop: upstream writes are flushed once, at `channelReadComplete`.
    var inRead = false
    /// Inside `begin`: an exchange attached now went upstream without waiting.
    var beginning = false
    var peer: String?
    /// The address the client connected to (the rebinding guard checks `Host` against it).
    var local: SocketAddress?
    /// Every deadline of the connection shares one timer (see `ProxyHandler+Deadlines`), and
    /// every time comes from the event loop's clock (an EmbeddedEventLoop's in tests).
    var timer = ConnectionTimer()
    /// A response's first progress check, armed at the end of the turn its head went out in.
    var progressCheck: (Exchange, NIODeadline)?
    /// What each exchange's ``ExchangeDeadlines`` are set from.
    let exchangeTimeouts: ExchangeDeadlines.Timeouts
    let metrics: ProxyMetrics
    /// Who connected, when the kernel said (a unix socket's peer, a local TCP socket's owner).
    let caller: ConnectionCaller?

    init(
        settings shared: ProxySettings.Shared,
        retryBudget: SharedBudget,
        viaTCP: Bool,
        pool: UpstreamConnectionPool,
        tokens: any TokenProvider,
        calls: ProviderCalls = ProviderCalls(),
        metrics: ProxyMetrics,
        logger: Logger,
        failures: ThrottledLogger,
        caller: ConnectionCaller? = nil
    ) {
        self.caller = caller
        self.shared = shared
        // Read in place: a local copy of the struct would retain each of its references.
        let limits = shared.value.proxy.limits
        self.parser = RequestParser(limits: shared.value.requestLimits)
        self.exchangeTimeouts = ExchangeDeadlines.Timeouts(
            body: TimeAmount(limits.bodyTimeout),
            response: TimeAmount(shared.value.upstream.responseTimeout),
            send: TimeAmount(limits.sendTimeout),
            read: TimeAmount(shared.value.upstream.readTimeout)
        )
        self.machine = StateMachine(
            headerTimeout: TimeAmount(limits.headerTimeout),
            idleTimeout: TimeAmount(limits.clientIdleTimeout),
            lingerTime: Self.lingerTime
        )
        self.retryBudget = retryBudget
        self.viaTCP = viaTCP
        self.pool = pool
        self.tokens = tokens
        self.calls = calls
        self.metrics = metrics
        self.logger = logger
        self.failures = failures
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.peer = context.channel.remoteAddress?.ipAddress
        self.local = context.channel.localAddress
        if self.viaTCP && (self.peer == nil || self.local == nil) {
            // Reset before it was served: nobody to answer, and no address to check it against.
            context.close(promise: nil)
            return
        }
        self.arm(self.machine.accepted(now: self.now))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Requests

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // After the last response, or once closing, what the client sends is dropped.
        if self.machine.dropsInput { return }
        var bytes = self.unwrapInboundIn(data)
        self.inRead = true
        if self.inbound.readableBytes == 0 {
            self.inbound = bytes
        } else {
            self.inbound.writeBuffer(&bytes)
        }
        self.parseInbound()
    }

    /// Parses what the client sent and handles each part, up to a request that must wait for
    /// the one in flight to end.
    func parseInbound() {
        guard !self.parsing else { return }
        self.parsing = true
        defer { self.parsing = false }
        while !(self.parser.betweenRequests && self.isBusy) {
            if self.machine.dropsInput { return }
            let part: RequestParser.Part?
            do {
                part = try self.parser.next(from: &self.inbound)
            } catch {
                self.inbound = WireFormat.empty
                self.refuse(error)
                return
            }
            guard let part else { break }
            self.handle(part)
        }
        // Let the read buffer go back to NIO's pool once everything in it is parsed.
        if self.inbound.readableBytes == 0 { self.inbound = WireFormat.empty }
    }

    var isBusy: Bool { self.machine.isBusy }

    /// Answers a request that cannot be parsed, or is over a limit, then closes.
    private func refuse(_ error: ProxyError) {
        let failure = error.failure(limits: self.parser.limits)
        switch self.state {
        case .exchanging(let exchange) where self.isCurrent(exchange):
            self.update(exchange) { $0.closeAfter(.brokenRequest) }
            self.fail(exchange, failure)
        case .idle, .discarding:
            self.answerAndClose(failure)
        case .exchanging, .lingering, .closed:
            self.closeClient()
        }
    }

    /// Handles a parsed part. The part is consumed: its head moves into the exchange, uncopied.
    func handle(_ part: consuming RequestParser.Part) {
        // The parser and `parseInbound` make the `closeClient()` cases impossible; never trust it.
        switch consume part {
        case .head(let head):
            switch self.state {
            case .idle:
                guard let context else { return }
                self.begin(head, context: context)
            case .exchanging:
                self.closeClient()
            case .discarding, .lingering, .closed:
                break
            }
        case .body(let buffer):
            switch self.state {
            case .exchanging(let exchange):
                let maxBody = self.settings.proxy.limits.maxRequestBody
                let action = self.update(exchange) { $0.bodyArrived(buffer, maxBody: maxBody) } ?? .drop
                exchange.retryBody.keep(buffer, limit: self.settings.proxy.retryBodyLimit)
                self.perform(action, for: exchange)
            case .idle:
                self.closeClient()
            case .discarding, .lingering, .closed:
                break
            }
        case .end:
            switch self.state {
            case .exchanging(let exchange):
                self.perform(self.update(exchange) { $0.endArrived() } ?? .drop, for: exchange)
            case .discarding:
                if self.machine.discardedRequestEnded() { self.closeClient() }
            case .idle:
                self.closeClient()
            case .lingering, .closed:
                break
            }
        }
    }

    /// Does what the exchange's machine says of a request part. (The machine forwards only while a
    /// connection is attached, so `upstream` is there; never trust it.)
    private func perform(_ action: ExchangeStateMachine.PartAction, for exchange: Exchange) {
        switch action {
        case .forwardBody(let buffer):
            guard let upstream = exchange.upstream else { return self.closeClient() }
            self.sendBody(buffer, of: exchange, to: upstream)
        case .forwardEnd:
            guard let upstream = exchange.upstream else { return self.closeClient() }
            self.sendEnd(of: exchange, to: upstream)
            self.startResponseTimeout(exchange)
        case .refuseBody(let limit):
            self.fail(exchange, .bodyTooLarge(limit: limit))
        case .hold, .drop:
            break
        }
    }

    /// Starts the pipelined requests that waited for the previous exchange to end.
    func servePipelined() {
        self.parseInbound()
        // These parts were read before; no `channelReadComplete` will follow to flush them.
        if !self.inRead, let exchange = self.machine.inFlight, self.read(exchange, { $0.isForwarding }) == true {
            exchange.upstream?.flush()
        }
        self.resumeClientReads()
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        self.inRead = false
        self.readEnded()
        if let exchange = self.machine.inFlight, let upstream = exchange.upstream,
            self.read(exchange, { $0.isForwarding }) == true
        {
            self.pool.endOfTurn.upstream(upstream)
        }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        // A pipelined request waits, or nothing more is parsed after an upgrade request.
        if self.inbound.readableBytes > 0 && (self.parser.isStopped || (self.parser.betweenRequests && self.isBusy)) {
            self.readPending = true
            return
        }
        if let exchange = self.machine.inFlight,
            self.read(exchange, { !$0.clientMayRead(upstreamWritable: exchange.upstream?.isWritable ?? false) }) == true
        {
            self.readPending = true
            self.update(exchange) { $0.readsWereHeld() }
            return
        }
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, case .exchanging(let exchange) = self.state {
            exchange.upstream?.resumeReading()
        }
        context.fireChannelWritabilityChanged()
    }

    /// Resumes client reads held back earlier, if nothing holds them back any more.
    func resumeClientReads() {
        guard self.readPending, let context else { return }
        self.readPending = false
        self.read(context: context)
    }
}
