/// base64url without padding (RFC 7515 §2, RFC 4648 §5), written straight into a string: a
/// DPoP proof encodes three parts per request, so no intermediate `Data` or replacing pass.
/// Decoding is `JWTClaims.base64URLDecoded`'s.
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
}
