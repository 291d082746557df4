/// A request's route, roughly, as logs, spans, metrics and `status` may show it and as the engine
/// keys per-path rules by: the first segment of the path (`/api` of `/api/v1/users/42?x=1`),
/// never an id or a query. A segment that could be a credential (some APIs put their key there:
/// `/bot123:AAH…`) is `/*`: longer than 24 characters, or anything but letters, digits, `.`,
/// `_` and `-`. A target that is not a path (`*`, an absolute form) is `/*` too.
package enum PathPrefix {
    package static let longest = 24

    package static func of(_ target: String) -> String {
        guard target.utf8.first == UInt8(ascii: "/") else { return "/*" }
        let segment = target.utf8.dropFirst().prefix {
            $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") && $0 != UInt8(ascii: "#")
        }
        let plain = segment.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: ".")
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard plain, segment.count <= Self.longest else { return "/*" }
        return "/" + String(decoding: segment, as: UTF8.self)
    }
}
