import Configuration
import Foundation

/// The checks of `proxy.*` values that are more than a syntax.
extension ConfigBuilder {
    /// An origin as browsers send it in `Origin` (RFC 6454): `scheme://host[:port]`, lower case;
    /// `null` as it is.
    static func origin(_ text: String) -> String? {
        let lowered = text.lowercased()
        if lowered == "null" { return lowered }
        guard let components = URLComponents(string: lowered), let scheme = components.scheme,
            ["http", "https"].contains(scheme), let host = components.host, !host.isEmpty,
            components.path.isEmpty, components.query == nil, components.fragment == nil, components.user == nil
        else { return nil }
        return lowered
    }

    /// A `Host` value as clients send it: `name`, `name:port`, `[v6]` or `[v6]:port`, lower case.
    static func hostName(_ text: String) -> String? {
        let lowered = text.lowercased()
        var name = Substring(lowered)
        if lowered.hasPrefix("["), let close = lowered.firstIndex(of: "]") {
            let rest = lowered[lowered.index(after: close)...]
            guard rest.isEmpty || (rest.first == ":" && Self.isPort(rest.dropFirst())) else { return nil }
            name = lowered[lowered.index(after: lowered.startIndex)..<close]
            return !name.isEmpty && name.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) ? lowered : nil
        }
        if let colon = lowered.lastIndex(of: ":") {
            guard Self.isPort(lowered[lowered.index(after: colon)...]) else { return nil }
            name = lowered[..<colon]
        }
        let valid =
            !name.isEmpty && name.utf8.count <= 253
            && name.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "." || $0 == "_")
            }
        return valid ? lowered : nil
    }

    static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)
            && Int(text)! <= 65535
    }

    /// An RFC 9110 token of at most 32 characters, with no `/version`.
    static func isUpgradeProtocol(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 32
            && name.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "+"): true
                default: false
                }
            }
    }
}
