import NIOCore
import NIOHTTP1
import Synchronization

/// Serves one connection of ``TestUpstream``.
final class TestUpstreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let box: StateBox
    private let responder: @Sendable (RecordedRequest) -> TestResponse
    private var current: RecordedRequest?
    private var streamLeft = 0

    init(box: StateBox, responder: @escaping @Sendable (RecordedRequest) -> TestResponse) {
        self.box = box
        self.responder = responder
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .head(let head):
            self.current = RecordedRequest(
                head: head,
                body: context.channel.allocator.buffer(capacity: 0),
                bodyBytes: 0
            )
        case .body(var buffer):
            self.current?.bodyBytes += buffer.readableBytes
            if let kept = self.current?.body.readableBytes, kept < 65536 {
                let slice = buffer.readSlice(length: min(buffer.readableBytes, 65536 - kept))!
                self.current?.body.writeImmutableBuffer(slice)
            }
        case .end:
            guard let request = self.current else { return }
            self.current = nil
            self.box.upstream?.state.withLock { $0.requests.append(request) }
            self.perform(self.responder(request), context: context)
        }
    }

    private func perform(_ response: TestResponse, context: ChannelHandlerContext) {
        switch response {
        case .respond(let status, let headers, let body):
            var fields = HTTPHeaders(headers)
            if !fields.contains(name: "content-length") && !fields.contains(name: "transfer-encoding") {
                fields.add(name: "content-length", value: String(body.utf8.count))
            }
            context.write(
                self.wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: fields))),
                promise: nil
            )
            if !body.isEmpty {
                context.write(self.wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
            }
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        case .stream(let bytes):
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: ["content-length": String(bytes)])
            context.write(self.wrapOutboundOut(.head(head)), promise: nil)
            self.streamLeft = bytes
            self.pump(context: context)
        case .delayed(let delay, let then):
            context.eventLoop.assumeIsolated().scheduleTask(in: delay) { () -> Void in
                self.perform(then, context: context)
            }
        case .close:
            context.close(promise: nil)
        }
    }

    private static let chunk = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 * 1024)

    private func pump(context: ChannelHandlerContext) {
        while self.streamLeft > 0 && context.channel.isWritable {
            let size = min(self.streamLeft, Self.chunk.readableBytes)
            self.streamLeft -= size
            self.box.upstream?.state.withLock { $0.streamedBytes += size }
            context.write(
                self.wrapOutboundOut(.body(.byteBuffer(Self.chunk.getSlice(at: 0, length: size)!))),
                promise: nil
            )
        }
        if self.streamLeft == 0 {
            context.writeAndFlush(self.wrapOutboundOut(.end(nil)), promise: nil)
        } else {
            context.flush()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable && self.streamLeft > 0 { self.pump(context: context) }
        context.fireChannelWritabilityChanged()
    }
}
