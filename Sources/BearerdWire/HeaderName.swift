/// Case-insensitive header-name checks on UTF-8 bytes, without lowercasing (no allocation per header).
package enum HeaderName {
    /// Whether `name` equals `lowercase`, which must be lowercase ASCII.
    @inlinable @inline(__always)
    package static func equals(_ name: String, _ lowercase: StaticString) -> Bool {
        let count = lowercase.utf8CodeUnitCount
        guard name.utf8.count == count else { return false }
        return lowercase.withUTF8Buffer { expected in
            var index = 0
            for byte in name.utf8 {
                if byte | 0x20 != expected[index] { return false }
                index += 1
            }
            return true
        }
    }
}

// MARK: Bytes of a parsed head

extension HeaderName {
    /// Whether `raw[range]` equals `lowercase` (lowercase ASCII), ignoring ASCII case.
    @inlinable @inline(__always)
    package static func equals(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, _ lowercase: StaticString) -> Bool {
        guard range.count == lowercase.utf8CodeUnitCount else { return false }
        return lowercase.withUTF8Buffer { expected in
            var offset = 0
            for index in range {
                if raw[index] | 0x20 != expected[offset] { return false }
                offset += 1
            }
            return true
        }
    }

    /// Whether `raw[range]` starts with `prefix`, byte for byte.
    package static func hasPrefix(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, _ prefix: StaticString) -> Bool {
        guard range.count >= prefix.utf8CodeUnitCount else { return false }
        return prefix.withUTF8Buffer { expected in
            expected.indices.allSatisfy { raw[range.lowerBound + $0] == expected[$0] }
        }
    }

    /// Whether `raw[range]` is `name`, ignoring ASCII case (a name from the configuration).
    package static func equals(_ raw: UnsafeRawBufferPointer, _ range: Range<Int>, name: String) -> Bool {
        range.count == name.utf8.count && zip(range, name.utf8).allSatisfy { raw[$0] | 0x20 == $1 | 0x20 }
    }

    /// Whether two ranges hold the same bytes, ignoring ASCII case.
    package static func equals(_ raw: UnsafeRawBufferPointer, _ left: Range<Int>, _ right: Range<Int>) -> Bool {
        guard left.count == right.count else { return false }
        return zip(left, right).allSatisfy { raw[$0] | 0x20 == raw[$1] | 0x20 }
    }

    /// `tchar` (RFC 9110 §5.6.2).
    @inlinable @inline(__always)
    package static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// A byte a field value or reason phrase may hold: VCHAR, SP, HTAB, obs-text.
    @inlinable @inline(__always)
    package static func isFieldValueByte(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Calls `body` with each non-empty element of a comma-separated list, whitespace trimmed.
    package static func forEachListElement(
        _ raw: UnsafeRawBufferPointer,
        _ range: Range<Int>,
        _ body: (Range<Int>) -> Void
    ) {
        var start = range.lowerBound
        while start <= range.upperBound {
            var end = start
            while end < range.upperBound && raw[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last && (raw[first] == 0x20 || raw[first] == 0x09) { first += 1 }
            while last > first && (raw[last - 1] == 0x20 || raw[last - 1] == 0x09) { last -= 1 }
            if first < last { body(first..<last) }
            start = end + 1
        }
    }
}

extension HeaderName {
    /// Whether `raw[name]` names a field that applies to one connection only (RFC 9110
    /// §7.6.1), or the legacy `Proxy-Connection`: such fields never cross the proxy in either
    /// direction. The one list of hop-by-hop names.
    package static func isHopByHop(_ raw: UnsafeRawBufferPointer, _ name: Range<Int>) -> Bool {
        switch name.count {
        case 2: return equals(raw, name, "te")
        case 7: return equals(raw, name, "trailer") || equals(raw, name, "upgrade")
        case 10: return equals(raw, name, "connection") || equals(raw, name, "keep-alive")
        case 16: return equals(raw, name, "proxy-connection")
        case 17: return equals(raw, name, "transfer-encoding")
        case 18: return equals(raw, name, "proxy-authenticate")
        case 19: return equals(raw, name, "proxy-authorization")
        default: return false
        }
    }
}
