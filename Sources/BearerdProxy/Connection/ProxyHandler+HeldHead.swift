import BearerdWire
import NIOCore

/// A small response goes to the client in one write: its head is held until the first piece of
/// body, which is copied in behind it when small, and written before anything else otherwise.
/// Every write to the client between the head and the end goes through here first.
extension ProxyHandler {
    /// Writes the held head, if any, and keeps its buffer for the next response.
    func writeHeldHead(context: ChannelHandlerContext) {
        guard let head = self.heldHead else { return }
        self.heldHead = nil
        context.write(self.wrapOutboundOut(head), promise: nil)
        self.clientHeads.keep(head)
    }

    /// Writes the held head with `body` behind it (framed as one chunk when `chunked`) when the
    /// body is small; `true` if `body` went. Otherwise writes the head alone, and the caller
    /// writes `body`.
    func writeHeldHead(appending body: ByteBuffer, chunked: Bool, context: ChannelHandlerContext) -> Bool {
        guard var head = self.heldHead else { return false }
        guard body.readableBytes <= WireFormat.copiedBodyLimit else {
            self.writeHeldHead(context: context)
            return false
        }
        self.heldHead = nil
        if chunked {
            WireFormat.writeChunk(body, into: &head)
        } else {
            head.writeImmutableBuffer(body)
        }
        context.write(self.wrapOutboundOut(head), promise: nil)
        self.clientHeads.keep(head)
        return true
    }
}
