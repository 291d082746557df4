import NIOCore

extension ByteBuffer {
    /// Writes `name: value\r\n` in one write. Writing its four parts one by one costs four
    /// capacity checks and four exclusive accesses to the storage; heads are made of such lines,
    /// two heads per request.
    @inlinable @inline(__always)
    package mutating func writeHeadField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let count = name.count + value.count + 4
        self.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { out in
            var at = out.startIndex
            Self.copy(name, into: out, at: &at)
            out[at] = UInt8(ascii: ":")
            out[at + 1] = UInt8(ascii: " ")
            at += 2
            Self.copy(value, into: out, at: &at)
            out[at] = UInt8(ascii: "\r")
            out[at + 1] = UInt8(ascii: "\n")
            return count
        }
    }

    /// ``writeHeadField(name:value:)`` for a name bearerd writes and a value it holds as text.
    @inlinable @inline(__always)
    package mutating func writeHeadField(_ name: StaticString, _ value: String) {
        var value = value
        value.withUTF8 { valueBytes in
            name.withUTF8Buffer { nameBytes in
                self.writeHeadField(name: UnsafeRawBufferPointer(nameBytes), value: UnsafeRawBufferPointer(valueBytes))
            }
        }
    }

    /// ``writeHeadField(name:value:)`` for a name and a value held as text.
    @inlinable @inline(__always)
    package mutating func writeHeadField(_ name: String, _ value: String) {
        var name = name
        var value = value
        name.withUTF8 { nameBytes in
            value.withUTF8 { valueBytes in
                self.writeHeadField(name: UnsafeRawBufferPointer(nameBytes), value: UnsafeRawBufferPointer(valueBytes))
            }
        }
    }

    @inlinable @inline(__always)
    static func copy(_ bytes: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer, at: inout Int) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        (out.baseAddress! + at).copyMemory(from: source, byteCount: bytes.count)
        at += bytes.count
    }
}
