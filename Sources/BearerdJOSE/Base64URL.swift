/// base64url without padding (RFC 7515 §2, RFC 4648 §5), written straight into a string: a
/// DPoP proof encodes three parts per request, so no intermediate `Data` or replacing pass.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        let count = bytes.count
        let length = (count * 4 + 2) / 3
        return String(unsafeUninitializedCapacity: length) { out in
            var index = 0
            var iterator = bytes.makeIterator()
            while let first = iterator.next() {
                let second = iterator.next()
                let third = iterator.next()
                let word = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
                out[index] = Self.alphabet[Int(word >> 18 & 63)]
                out[index + 1] = Self.alphabet[Int(word >> 12 & 63)]
                index += 2
                if second != nil {
                    out[index] = Self.alphabet[Int(word >> 6 & 63)]
                    index += 1
                }
                if third != nil {
                    out[index] = Self.alphabet[Int(word & 63)]
                    index += 1
                }
            }
            return index
        }
    }

    /// The bytes of a base64url text (padding allowed), or `nil` when it is not one.
    static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var bits: UInt32 = 0
        var count = 0
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3 / 4)
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): value = 62
            case UInt8(ascii: "_"): value = 63
            case UInt8(ascii: "="): continue
            default: return nil
            }
            bits = bits << 6 | UInt32(value)
            count += 6
            if count >= 8 {
                count -= 8
                out.append(UInt8(truncatingIfNeeded: bits >> UInt32(count)))
            }
        }
        return out
    }
}
