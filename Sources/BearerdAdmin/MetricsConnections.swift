import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1

/// The metrics listener's open connections, and which one goes when there are more than it
/// keeps. Any local process can open connections at any rate, so the choice must leave the
/// scraper its connection: one whose request is being answered (a complete head came, its
/// answer has not ended) is never closed; among the rest, the uid holding the most loses its
/// oldest. A flood of one user's connections then closes that user's own, whatever the rate;
/// with every connection busy, the newcomer is refused. A pure value; the server keeps it locked.
struct MetricsConnections: Sendable {
    struct Entry: Sendable {
        /// The owner of the client's socket, when the kernel named it.
        var uid: UInt32?
        /// Order of arrival.
        var sequence: UInt64
        /// A request head came and its answer has not ended.
        var busy = false
    }

    let limit: Int
    private(set) var entries: [ObjectIdentifier: Entry] = [:]
    private var next: UInt64 = 0

    init(limit: Int) {
        self.limit = limit
    }

    /// A connection was accepted. Returns the one to close, if the table is over its limit: an
    /// idle one of the uid holding the most idle ones (its oldest), else `id` itself.
    mutating func accepted(_ id: ObjectIdentifier, uid: UInt32?) -> ObjectIdentifier? {
        self.next += 1
        self.entries[id] = Entry(uid: uid, sequence: self.next)
        guard self.entries.count > self.limit else { return nil }
        var idle: [UInt32?: [(id: ObjectIdentifier, sequence: UInt64)]] = [:]
        for (key, entry) in self.entries where !entry.busy {
            idle[entry.uid, default: []].append((key, entry.sequence))
        }
        guard let crowd = idle.max(by: { $0.value.count < $1.value.count })?.value,
            let oldest = crowd.min(by: { $0.sequence < $1.sequence })
        else { return id }
        return oldest.id
    }

    mutating func requestBegan(_ id: ObjectIdentifier) { self.entries[id]?.busy = true }

    mutating func answerEnded(_ id: ObjectIdentifier) { self.entries[id]?.busy = false }

    mutating func closed(_ id: ObjectIdentifier) { self.entries[id] = nil }
}

/// Tells ``MetricsConnections`` when a request head arrives on a connection and when its answer
/// ends, between the HTTP codec and the connection's reader.
final class MetricsRequestMark: ChannelDuplexHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    private let table: NIOLockedValueBox<MetricsConnections>
    private let id: ObjectIdentifier

    init(table: NIOLockedValueBox<MetricsConnections>, id: ObjectIdentifier) {
        self.table = table
        self.id = id
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = self.unwrapInboundIn(data) { self.table.withLockedValue { $0.requestBegan(self.id) } }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = self.unwrapOutboundIn(data) { self.table.withLockedValue { $0.answerEnded(self.id) } }
        context.write(data, promise: promise)
    }
}
