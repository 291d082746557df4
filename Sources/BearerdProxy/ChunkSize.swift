import NIOCore

/// `chunk-size [ BWS ";" chunk-ext ]` (RFC 9112 §7.1), the size in hexadecimal: the one parser
/// of chunk-size lines, for request and response bodies alike.
enum ChunkSize {
    /// What is wrong with a chunk-size line.
    struct Malformed: Error {
        let what: String
    }

    static func parse(_ line: ByteBuffer) throws(Malformed) -> Int {
        try line.withUnsafeReadableBytes { raw throws(Malformed) in
            var size = 0
            var digits = 0
            var index = 0
            while index < raw.count, let value = Self.hexValue(raw[index]) {
                guard digits < 15 else { throw Malformed(what: "a chunk size over 15 hex digits") }
                size = size << 4 | value
                digits += 1
                index += 1
            }
            guard digits > 0 else { throw Malformed(what: "a chunk without a size") }
            // `*( ";" name [ "=" ( token / quoted-string ) ] )`, without the whitespace RFC 9112
            // tolerates there: llhttp refuses it too, and nothing honest sends it.
            while index < raw.count {
                guard raw[index] == UInt8(ascii: ";") else {
                    throw Malformed(what: "a chunk size that is not hexadecimal")
                }
                index += 1
                let name = index
                while index < raw.count && HeaderName.isTokenByte(raw[index]) { index += 1 }
                guard index > name else { throw Malformed(what: "a chunk extension without a name") }
                guard index < raw.count, raw[index] == UInt8(ascii: "=") else { continue }
                index += 1
                if index < raw.count && raw[index] == UInt8(ascii: "\"") {
                    index = try Self.skipQuoted(raw, from: index + 1)
                } else {
                    let value = index
                    while index < raw.count && HeaderName.isTokenByte(raw[index]) { index += 1 }
                    guard index > value else { throw Malformed(what: "a chunk extension without a value") }
                }
            }
            return size
        }
    }

    /// The index after a quoted-string's closing quote; `start` is after the opening one.
    private static func skipQuoted(_ raw: UnsafeRawBufferPointer, from start: Int) throws(Malformed) -> Int {
        var index = start
        while index < raw.count {
            switch raw[index] {
            case UInt8(ascii: "\""):
                return index + 1
            case UInt8(ascii: "\\"):
                guard index + 1 < raw.count, HeaderName.isFieldValueByte(raw[index + 1]) else {
                    throw Malformed(what: "a bad escape in a chunk extension")
                }
                index += 2
            case let byte where byte == 0x09 || (byte >= 0x20 && byte < 0x7F):
                index += 1
            default:
                throw Malformed(what: "a control character in a chunk extension")
            }
        }
        throw Malformed(what: "an unterminated quoted chunk extension")
    }

    @inline(__always)
    private static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): Int(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): Int(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }
}
