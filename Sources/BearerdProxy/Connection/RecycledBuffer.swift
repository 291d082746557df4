import BearerdWire
import NIOCore

/// A buffer for the heads bearerd writes, used again once NIO has written it: taken, filled,
/// handed to a write and kept. When NIO has let go of it by the next take, it is cleared in
/// place, so a request costs no allocation for its heads; when NIO still holds it, the take
/// allocates a new one (a ByteBuffer never changes bytes another holder sees).
struct RecycledBuffer {
    private var buffer = WireFormat.empty

    mutating func take(capacity: Int) -> ByteBuffer {
        var taken = self.buffer
        self.buffer = WireFormat.empty
        taken.clear(minimumCapacity: capacity)
        return taken
    }

    mutating func keep(_ buffer: ByteBuffer) {
        self.buffer = buffer
    }
}
