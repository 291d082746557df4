import Foundation

/// The one form of a client's origin-form request target that bearerd checks against its path
/// lists and forwards, so the path checked is always the path sent (RFC 3986 §6.2.2).
///
/// - `%`-escapes of unreserved characters are decoded (`%61` → `a`); every other escape is kept
///   with upper-case hex digits; bytes that may not appear raw are %-escaped.
/// - Repeated slashes are one slash.
/// - Refused, because upstreams read them differently: `%2F`, `%5C`, `\`, `%00` and every other
///   control character, `#`, invalid `%`-escapes, double-encoded escapes (`%252e`), `.` and `..`
///   segments in any encoding (also overlong UTF-8, and characters whose compatibility form is a
///   dot or a slash), invalid UTF-8, and `;` path parameters unless they are allowed.
///
/// The form is idempotent: parsing `target` again gives the same value.
package struct CanonicalTarget: Sendable, Hashable {
    /// `path?query` as it is forwarded (before the upstream's base path is put in front).
    package let target: String
    /// How many bytes of `target` are the path.
    private let pathLength: Int

    /// The path: starts with `/`, never holds `//`, `.` or `..` segments.
    package var path: String { String(Substring(self.target.utf8.prefix(self.pathLength))) }
    /// The query without its `?`, or `nil` when there was no `?`.
    package var query: String? {
        self.pathLength < self.target.utf8.count
            ? String(Substring(self.target.utf8.dropFirst(self.pathLength + 1))) : nil
    }

    init(path: String, query: String?) {
        self.target = query.map { path + "?" + $0 } ?? path
        self.pathLength = path.utf8.count
    }

    private init(canonical target: String, pathLength: Int) {
        self.target = target
        self.pathLength = pathLength
    }

    /// Parses an origin-form target (`/path?query`).
    /// - Parameter allowPathParams: whether `;` may appear in the path (`proxy.allow_path_params`).
    package static func parse(_ target: String, allowPathParams: Bool) -> Parsed<CanonicalTarget> {
        if let pathLength = Self.canonicalPathLength(target) {
            return .parsed(CanonicalTarget(canonical: target, pathLength: pathLength))
        }
        return Self.parseByteByByte(target, allowPathParams: allowPathParams)
    }

    /// The full parser, without the shortcut for targets already canonical (tests compare them).
    static func parseByteByByte(_ target: String, allowPathParams: Bool) -> Parsed<CanonicalTarget> {
        var parser = Parser(allowPathParams: allowPathParams)
        return parser.parse(Array(target.utf8))
    }

    /// The length of the path when `target` is canonical as it stands, which most are: ASCII
    /// letters, digits and `-_~!$&'()*+,=:@` in segments of one slash each, dots only inside a
    /// segment, no `%`, `;`, `\` or `#`, and a query of the same bytes plus `/` and `?`. Then
    /// the target is forwarded as the client's own string, with no copy. `nil`: parse it.
    static func canonicalPathLength(_ target: String) -> Int? {
        var target = target
        return target.withUTF8 { Self.canonicalPathLength(UnsafeRawBufferPointer($0)) }
    }

    /// The same test on the target's bytes, which the data path reads from the request head
    /// without making a string of them.
    package static func canonicalPathLength(_ target: UnsafeRawBufferPointer) -> Int? {
        var count = 0
        var pathLength: Int?
        var previous: UInt8 = 0
        var segmentLength = 0
        var segmentDots = 0
        for byte in target {
            count += 1
            if pathLength != nil {
                guard
                    Parser.mayStandRaw(byte) && byte != UInt8(ascii: ";") || byte == UInt8(ascii: "/")
                        || byte == UInt8(ascii: "?")
                else { return nil }
                continue
            }
            switch byte {
            case UInt8(ascii: "/"):
                if count == 1 { break }
                // `//`, or a segment that is `.` or `..`.
                if previous == UInt8(ascii: "/")
                    || (segmentLength > 0 && segmentLength == segmentDots && segmentDots <= 2)
                {
                    return nil
                }
                segmentLength = 0
                segmentDots = 0
            case UInt8(ascii: "?"):
                if segmentLength > 0 && segmentLength == segmentDots && segmentDots <= 2 { return nil }
                pathLength = count - 1
            case UInt8(ascii: ";"):
                return nil
            default:
                guard Parser.mayStandRaw(byte) else { return nil }
                segmentLength += 1
                if byte == UInt8(ascii: ".") { segmentDots += 1 }
            }
            previous = byte
        }
        guard count > 0, target.first == UInt8(ascii: "/") else { return nil }
        if pathLength == nil && segmentLength > 0 && segmentLength == segmentDots && segmentDots <= 2 { return nil }
        return pathLength ?? count
    }

    private struct Parser {
        let allowPathParams: Bool
        var out: [UInt8] = []
        /// The path's bytes with every escape decoded, for the UTF-8 check.
        var decoded: [UInt8] = []
        var segmentStart = 0
        var segmentHasNonASCII = false

        init(allowPathParams: Bool) { self.allowPathParams = allowPathParams }

        mutating func parse(_ bytes: [UInt8]) -> Parsed<CanonicalTarget> {
            guard bytes.first == UInt8(ascii: "/") else {
                return .refused("only origin-form request targets like /path?query are accepted")
            }
            self.out.reserveCapacity(bytes.count + 8)
            var index = 0
            var queryStart: Int?
            while index < bytes.count {
                let byte = bytes[index]
                if byte == UInt8(ascii: "?") {
                    queryStart = index + 1
                    break
                }
                switch byte {
                case UInt8(ascii: "/"):
                    if let refusal = self.endSegment() { return .refused(refusal) }
                    if self.out.last != UInt8(ascii: "/") {
                        self.out.append(byte)
                        self.decoded.append(byte)
                    }
                    self.segmentStart = self.out.count
                    index += 1
                case UInt8(ascii: "%"):
                    guard let value = Self.escape(bytes, at: index) else {
                        return .refused("the path holds an invalid %-escape")
                    }
                    if let refusal = self.appendDecoded(value) {
                        return .refused(refusal)
                    }
                    index += 3
                default:
                    if let refusal = self.appendRaw(byte) { return .refused(refusal) }
                    index += 1
                }
            }
            if let refusal = self.endSegment() { return .refused(refusal) }
            // `%25` then two hex digits, however it was spelled (`%252e`, `%25%32%65`): a
            // server that decodes twice reads another character.
            for index in self.out.indices.dropLast(4)
            where self.out[index] == UInt8(ascii: "%") && self.out[index + 1] == UInt8(ascii: "2")
                && self.out[index + 2] == UInt8(ascii: "5") && Self.hex(self.out[index + 3]) != nil
                && Self.hex(self.out[index + 4]) != nil
            {
                return .refused(
                    "the path holds a double-encoded %-escape (like %252e), which some servers decode twice"
                )
            }
            guard String(validating: self.decoded, as: UTF8.self) != nil else {
                return .refused("the path is not valid UTF-8 once decoded (overlong forms can hide / or .)")
            }
            let path = String(decoding: self.out, as: UTF8.self)
            guard let queryStart else { return .parsed(CanonicalTarget(path: path, query: nil)) }
            return Self.query(bytes[queryStart...]).map { CanonicalTarget(path: path, query: $0) }
        }

        private mutating func appendRaw(_ byte: UInt8) -> String? {
            switch byte {
            case UInt8(ascii: "#"):
                return "a request target must not hold # (a fragment is never sent to a server)"
            case UInt8(ascii: "\\"):
                return "the path holds a backslash, which some servers read as /"
            case UInt8(ascii: ";") where !self.allowPathParams:
                return "the path holds ; (path parameters are refused unless proxy.allow_path_params is on)"
            case 0..<0x21, 0x7F:
                return "the request target holds a space or a control character"
            default:
                if byte >= 0x80 { self.segmentHasNonASCII = true }
                if Self.mayStandRaw(byte) { self.out.append(byte) } else { Self.writeEscape(byte, into: &self.out) }
                self.decoded.append(byte)
                return nil
            }
        }

        private mutating func appendDecoded(_ value: UInt8) -> String? {
            switch value {
            case UInt8(ascii: "/"), UInt8(ascii: "\\"):
                return "the path holds an encoded / or \\ (%2F, %5C), which servers read in different ways"
            case 0..<0x20, 0x7F:
                return "the path holds an encoded control character (like %00 or %0A)"
            case UInt8(ascii: ";") where !self.allowPathParams:
                return "the path holds an encoded ; (path parameters are refused unless proxy.allow_path_params is on)"
            default:
                if value >= 0x80 { self.segmentHasNonASCII = true }
                if Self.isUnreserved(value) { self.out.append(value) } else { Self.writeEscape(value, into: &self.out) }
                self.decoded.append(value)
                return nil
            }
        }

        /// Checks the segment that just ended: no `.` or `..`, in any form.
        private mutating func endSegment() -> String? {
            defer { self.segmentHasNonASCII = false }
            var segment = self.out[self.segmentStart...]
            if self.allowPathParams {
                // A parameter starts at `;`, or at `%3B` for a server that decodes first.
                let end = segment.indices.first { index in
                    segment[index] == UInt8(ascii: ";")
                        || (segment[index] == UInt8(ascii: "%") && index + 2 < segment.endIndex
                            && segment[index + 1] == UInt8(ascii: "3") && segment[index + 2] == UInt8(ascii: "B"))
                }
                if let end { segment = segment[..<end] }
            }
            if segment.elementsEqual([UInt8(ascii: ".")])
                || segment.elementsEqual([UInt8(ascii: "."), UInt8(ascii: ".")])
            {
                return "the path holds a . or .. segment (also %2E); send a normalized path"
            }
            guard self.segmentHasNonASCII else { return nil }
            // Some servers normalise (NFC, NFKC) before routing: U+FF0E FULLWIDTH FULL STOP and
            // U+2025 TWO DOT LEADER become dots, U+FF0F a slash, U+037E GREEK QUESTION MARK a `;`.
            // A segment that folds into a dot segment or any delimiter has no single meaning.
            let start = self.decoded.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0
            guard let text = String(validating: self.decoded[start...], as: UTF8.self) else { return nil }
            let folded = text.precomposedStringWithCompatibilityMapping
            let delimiters: Set<Unicode.Scalar> = ["/", "\\", ";", "?", "#", "%"]
            if folded == "." || folded == ".."
                || folded.unicodeScalars.contains(where: { delimiters.contains($0) || $0.value < 0x20 })
            {
                return "the path holds a character that some servers read as ., / or another delimiter"
            }
            return nil
        }

        /// The query: escapes checked and upper-cased, unsafe bytes escaped, nothing decoded.
        static func query(_ bytes: ArraySlice<UInt8>) -> Parsed<String> {
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count)
            var index = bytes.startIndex
            while index < bytes.endIndex {
                let byte = bytes[index]
                switch byte {
                case UInt8(ascii: "#"):
                    return .refused("a request target must not hold # (a fragment is never sent to a server)")
                case 0..<0x21, 0x7F:
                    return .refused("the request target holds a space or a control character")
                case UInt8(ascii: "%"):
                    guard let value = Self.escape(Array(bytes[index..<min(index + 3, bytes.endIndex)]), at: 0) else {
                        return .refused("the query holds an invalid %-escape")
                    }
                    Self.writeEscape(value, into: &out)
                    index += 3
                    continue
                default:
                    if Self.mayStandRaw(byte) || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "/") {
                        out.append(byte)
                    } else {
                        Self.writeEscape(byte, into: &out)
                    }
                }
                index += 1
            }
            return .parsed(String(decoding: out, as: UTF8.self))
        }

        /// The value of the `%XY` escape at `index`, or `nil` when it is not one.
        static func escape(_ bytes: [UInt8], at index: Int) -> UInt8? {
            guard index + 2 < bytes.count, let high = Self.hex(bytes[index + 1]), let low = Self.hex(bytes[index + 2])
            else { return nil }
            return high << 4 | low
        }

        static func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
            default: nil
            }
        }

        static func writeEscape(_ byte: UInt8, into out: inout [UInt8]) {
            let digits = Array("0123456789ABCDEF".utf8)
            out.append(UInt8(ascii: "%"))
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }

        /// ALPHA / DIGIT / `-` / `.` / `_` / `~` (RFC 3986 §2.3).
        static func isUnreserved(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                true
            default: false
            }
        }

        /// A `pchar` that is not `%` (RFC 3986 §3.3): unreserved, sub-delims, `:` and `@`.
        static func mayStandRaw(_ byte: UInt8) -> Bool {
            if Self.isUnreserved(byte) { return true }
            return switch byte {
            case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
                UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
                UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"):
                true
            default: false
            }
        }
    }
}
