import NIOCore

/// `chunk-size [ BWS ";" chunk-ext ]` (RFC 9112 §7.1), the size in hexadecimal: the one parser
/// of chunk-size lines, for request and response bodies alike. A refusal says what is wrong;
/// the body's sender makes it a client's or the upstream's fault.
enum ChunkSize {
    static func parse(_ line: ByteBuffer) -> Parsed<Int> {
        line.withUnsafeReadableBytes { raw -> Parsed<Int> in
            var size = 0
            var digits = 0
            var index = 0
            while index < raw.count, let value = Self.hexValue(raw[index]) {
                guard digits < 15 else { return .refused("a chunk size over 15 hex digits") }
                size = size << 4 | value
                digits += 1
                index += 1
            }
            guard digits > 0 else { return .refused("a chunk without a size") }
            // `*( ";" name [ "=" ( token / quoted-string ) ] )`, without the whitespace RFC 9112
            // tolerates there: llhttp refuses it too, and nothing honest sends it.
            while index < raw.count {
                guard raw[index] == UInt8(ascii: ";") else {
                    return .refused("a chunk size that is not hexadecimal")
                }
                index += 1
                let name = index
                while index < raw.count && HeaderName.isTokenByte(raw[index]) { index += 1 }
                guard index > name else { return .refused("a chunk extension without a name") }
                guard index < raw.count, raw[index] == UInt8(ascii: "=") else { continue }
                index += 1
                if index < raw.count && raw[index] == UInt8(ascii: "\"") {
                    switch Self.skipQuoted(raw, from: index + 1) {
                    case .parsed(let next): index = next
                    case .refused(let what): return .refused(what)
                    }
                } else {
                    let value = index
                    while index < raw.count && HeaderName.isTokenByte(raw[index]) { index += 1 }
                    guard index > value else { return .refused("a chunk extension without a value") }
                }
            }
            return .parsed(size)
        }
    }

    /// The index after a quoted-string's closing quote; `start` is after the opening one.
    private static func skipQuoted(_ raw: UnsafeRawBufferPointer, from start: Int) -> Parsed<Int> {
        var index = start
        while index < raw.count {
            switch raw[index] {
            case UInt8(ascii: "\""):
                return .parsed(index + 1)
            case UInt8(ascii: "\\"):
                guard index + 1 < raw.count, HeaderName.isFieldValueByte(raw[index + 1]) else {
                    return .refused("a bad escape in a chunk extension")
                }
                index += 2
            case let byte where byte == 0x09 || (byte >= 0x20 && byte < 0x7F):
                index += 1
            default:
                return .refused("a control character in a chunk extension")
            }
        }
        return .refused("an unterminated quoted chunk extension")
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
