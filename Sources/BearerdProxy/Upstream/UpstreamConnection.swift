import BearerdAuth
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// Receives what an upstream connection produces while it serves one exchange.
protocol UpstreamConnectionOwner: AnyObject {
    /// Whether the client can take more response bytes now; when not, upstream reads pause.
    var clientIsWritable: Bool { get }
    func upstreamReceived(_ part: ResponseParser.Part)
    func upstreamReadComplete()
    func upstreamBecameWritable()
    func upstreamFailed(_ error: any Error)
    /// The upstream answered 101 to a request that asked for an upgrade; `rest` is what it sent
    /// after the head, already in the new protocol. The owner splices the connections next.
    func upstreamSwitched(_ head: ResponseHead, rest: ByteBuffer)
}

/// The last handler of a pooled upstream channel. It outlives exchanges: while leased it parses
/// the response bytes into parts for its owner and pauses reading while the client cannot keep
/// up; while idle in the pool it keeps one read outstanding, so a close by the upstream is
/// noticed at once. Requests arrive already serialised (``HeaderRewriter``).
final class UpstreamConnection: ChannelDuplexHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private enum State {
        case connecting
        case idle(since: NIODeadline)
        case leased(any UpstreamConnectionOwner)
        /// Answered 101: the connection leaves the pool for a splice.
        case switched
        case closed
    }

    private var state: State = .connecting
    private var context: ChannelHandlerContext?
    private var idleTimer = ConnectionTimer()
    private var idleTimeout = TimeAmount.seconds(60)
    private var readPending = false
    private var parser = ResponseParser()
    /// Bytes read but not parsed yet: part of a head or of a chunk-size line.
    private var unparsed: ByteBuffer?
    /// Requests this connection has carried; more than one means it was reused.
    private(set) var requestCount = 0
    weak var pool: UpstreamConnectionPool?

    var isWritable: Bool { self.context?.channel.isWritable ?? false }

    var isOpen: Bool {
        if case .closed = self.state { return false }
        return self.context?.channel.isActive ?? false
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Lease

    /// Hands the connection to an exchange whose request goes out next; `upgrade`: the request
    /// asks to switch protocols.
    func lease(to owner: any UpstreamConnectionOwner, method: RequestMethod, upgrade: Bool = false) {
        self.state = .leased(owner)
        self.requestCount += 1
        self.parser.expectResponse(toHEAD: method == .HEAD, upgrade: upgrade)
    }

    /// After 101: the upstream channel goes on as `splice`'s other end; this handler leaves.
    func splice(into splice: SpliceHandler) {
        guard case .switched = self.state, let context else { return }
        self.idleTimer.cancel()
        do {
            try context.pipeline.syncOperations.addHandler(splice)
            context.pipeline.syncOperations.removeHandler(self, promise: nil)
            if self.readPending {
                self.readPending = false
                context.channel.read()
            }
        } catch {
            self.state = .closed
            context.close(promise: nil)
        }
    }

    /// Puts the connection in the pool's care: it may sit unused for `idleTimeout`. Also for a new
    /// connection whose exchange went away before it was needed.
    func returnToIdle(idleTimeout: TimeAmount) {
        guard let context else { return }
        if case .closed = self.state { return }
        let now = context.eventLoop.now
        self.idleTimeout = idleTimeout
        self.state = .idle(since: now)
        self.parser.reset()
        self.unparsed = nil
        if self.idleTimer.needsArming(at: now + idleTimeout) {
            self.idleTimer.arm(at: now + idleTimeout, on: context.eventLoop) { self.idleTimerFired() }
        }
        if self.readPending {
            self.readPending = false
            context.read()
        }
    }

    /// Closes the connection; an owner, if any, is not told (it asked for this).
    func close() {
        if case .closed = self.state { return }
        self.state = .closed
        self.idleTimer.cancel()
        self.context?.close(promise: nil)
    }

    private func idleTimerFired() {
        self.idleTimer.fired()
        guard case .idle(let since) = self.state, let context else { return }
        let deadline = since + self.idleTimeout
        if context.eventLoop.now >= deadline {
            self.close()
        } else {
            self.idleTimer.arm(at: deadline, on: context.eventLoop) { self.idleTimerFired() }
        }
    }

    // MARK: Writing (from the owner)

    func write(_ bytes: ByteBuffer) {
        self.context?.write(self.wrapOutboundOut(bytes), promise: nil)
    }

    func flush() {
        self.context?.flush()
    }

    /// The client can take more bytes again: resume a read held back for it.
    func resumeReading() {
        guard self.readPending, let context else { return }
        self.readPending = false
        context.read()
    }

    // MARK: Channel events

    func channelActive(context: ChannelHandlerContext) {
        if case .connecting = self.state { self.state = .idle(since: context.eventLoop.now) }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.state {
        case .leased:
            var bytes = self.unwrapInboundIn(data)
            if var unparsed = self.unparsed {
                self.unparsed = nil
                unparsed.writeBuffer(&bytes)
                bytes = unparsed
            }
            self.parse(&bytes)
        case .idle, .connecting:
            // Nobody asked: an idle connection must not talk. Drop it.
            self.close()
        case .switched, .closed:
            break
        }
    }

    /// Hands every complete part to the owner; keeps what is left of an incomplete one.
    private func parse(_ bytes: inout ByteBuffer) {
        var ended = false
        do {
            while case .leased(let owner) = self.state, let part = try self.parser.next(from: &bytes) {
                if case .head(let head) = part, head.status == 101 {
                    self.state = .switched
                    owner.upstreamSwitched(head, rest: bytes)
                    return
                }
                owner.upstreamReceived(part)
                if case .end = part {
                    ended = true
                    break
                }
            }
        } catch {
            self.fail(error)
            return
        }
        guard bytes.readableBytes > 0 else { return }
        switch self.state {
        case .closed, .switched:
            break
        case .idle, .connecting:
            // More than the response: the upstream is not speaking HTTP/1.1 with us.
            self.close()
        case .leased:
            if ended {
                // Same, and the connection went straight to the next request: that one fails.
                self.fail(ProxyError.badResponse("bytes after the end of the previous response"))
            } else {
                bytes.discardReadBytes()
                self.unparsed = bytes
            }
        }
    }

    private func fail(_ error: any Error) {
        let previous = self.state
        self.state = .closed
        if case .leased(let owner) = previous { owner.upstreamFailed(error) }
        self.idleTimer.cancel()
        self.context?.close(promise: nil)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .leased(let owner) = self.state { owner.upstreamReadComplete() }
    }

    func read(context: ChannelHandlerContext) {
        if case .leased(let owner) = self.state, !owner.clientIsWritable {
            self.readPending = true
        } else {
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable, case .leased(let owner) = self.state { owner.upstreamBecameWritable() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if case .leased(let owner) = self.state, self.parser.endsAtClose {
            // A body without Content-Length or chunking ends here.
            self.parser.reset()
            owner.upstreamReceived(.end)
        }
        let previous = self.state
        self.state = .closed
        switch previous {
        case .leased(let owner): owner.upstreamFailed(ChannelError.inputClosed)
        case .idle, .connecting, .switched, .closed: break
        }
        self.idleTimer.cancel()
        self.pool?.remove(self)
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.fail(error)
    }
}

/// Leaves the upstream's pipeline when its connection is spliced.
extension UpstreamConnection: RemovableChannelHandler {}
