import BearerdAuth
import BearerdFiles
import BearerdProxy
import BearerdWire
import Configuration
import Foundation

/// The checks of `proxy.*` values that are more than a syntax.
extension ConfigBuilder {
    /// A size, or `nil` for "unlimited" (or nothing written); 0 is refused.
    mutating func sizeOrUnlimited(_ key: ConfigKeyDescriptor) -> Int? {
        guard let text = self.string(key), text.lowercased() != "unlimited" else { return nil }
        let size = self.parsed(key, expected: "a size like 10MiB", ConfigValueParsers.size)
        if size == 0 { self.issue(key.name, "must be more than 0 (leave it out for no limit)") }
        return size
    }

    /// HTTP method names, upper case.
    mutating func methods(_ key: ConfigKeyDescriptor) -> Set<String> {
        let methods = Set(self.list(key).map { $0.uppercased() })
        for method in methods where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            self.issue(key.name, "must list HTTP methods like GET or POST (got \"\(method.prefix(40))\")")
        }
        return methods
    }

    /// Upgrade protocol names, lower case, at most 16.
    mutating func upgradeProtocols(_ key: ConfigKeyDescriptor) -> Set<String> {
        let names = Set(self.list(key).map { $0.lowercased() })
        for name in names where !Self.isUpgradeProtocol(name) {
            self.issue(
                key.name,
                "must list protocol names like websocket, without a version (got \"\(name.prefix(40))\")"
            )
        }
        for name in names.intersection(BearerdConfiguration.Proxy.multiplexedUpgrades).sorted() {
            self.issue(
                key.name,
                "cannot allow \(name): an HTTP/2 connection carries many requests, past the method and path lists and the header filter that bearerd applies to each"
            )
        }
        if names.count > 16 { self.issue(key.name, "lists more than 16 protocols") }
        return names
    }

    /// A file holding a secret, resolved and checked (mode 0600, ours).
    mutating func secretFile(_ key: ConfigKeyDescriptor) -> String? {
        let file = self.string(key).map(self.resolve)
        if let file, let problem = self.secretFileProblem(path: file) { self.issue(key.name, problem) }
        return file
    }

    /// A header name of letters, digits and `-`, not one bearerd or the client needs as it is.
    mutating func headerName(_ key: ConfigKeyDescriptor) -> String {
        let name = self.string(key) ?? ""
        let valid =
            !name.isEmpty && name.utf8.count <= 64
            && name.utf8.allSatisfy {
                ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D
            }
            && !["authorization", "host", "cookie"].contains(name.lowercased())
        if !valid {
            self.issue(key.name, "must be a header name of letters, digits and - (got \"\(name.prefix(64))\")")
        }
        return name
    }

    /// Path prefixes in the canonical form the data path compares.
    mutating func pathPrefixes(_ key: ConfigKeyDescriptor, allowPathParams: Bool) -> [String] {
        var canonical: [String] = []
        for path in self.list(key) {
            switch CanonicalTarget.parse(path, allowPathParams: allowPathParams) {
            case .parsed(let target) where target.query == nil:
                canonical.append(target.path)
            case .parsed:
                self.issue(key.name, "must list paths like /api/ or /admin, without a query (got \"\(path)\")")
            case .refused(let reason):
                self.issue(key.name, "must list paths like /api/ or /admin: \(reason) (got \"\(path)\")")
            }
        }
        return canonical
    }

    /// The fields a request may not be given by configuration: bearerd writes them (Host,
    /// the token, the proof, the framing), or they concern one connection only.
    static let reservedHeaders: Set<String> = [
        "host", "authorization", "dpop", "content-length", "transfer-encoding", "connection", "keep-alive",
        "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade", "expect",
    ]
    static let forwardingHeaders: Set<String> = [
        "x-forwarded-for", "x-forwarded-proto", "x-forwarded-host", "forwarded",
    ]

    /// `key`'s "Name: value" entries, each checked as RFC 9110 says a field is; an entry it
    /// refuses is an issue that names the field but never shows its value.
    mutating func headerFields(_ key: ConfigKeyDescriptor, forwarded: Bool) -> [BearerdConfiguration.Proxy.Header] {
        let entries = self.list(key)
        if entries.count > 32 { self.issue(key.name, "lists \(entries.count) fields; at most 32") }
        var headers: [BearerdConfiguration.Proxy.Header] = []
        for (index, entry) in entries.prefix(32).enumerated() {
            let colon = entry.firstIndex(of: ":")
            let name = colon.map { entry[..<$0].trimmingCharacters(in: .whitespaces) } ?? ""
            let value = colon.map { entry[entry.index(after: $0)...].trimmingCharacters(in: .whitespaces) } ?? ""
            let lowered = name.lowercased()
            let problem: String? =
                if colon == nil || name.isEmpty || name.utf8.count > 64
                    || !name.unicodeScalars.allSatisfy({
                        $0.isASCII
                            && ($0.properties.isAlphabetic || ("0"..."9").contains($0)
                                || "!#$%&'*+-.^_`|~".unicodeScalars.contains($0))
                    })
                {
                    "entry \(index + 1) must look like \"X-Api-Version: 2024-06-01\": a field name of letters, digits and -, a colon, a value"
                } else if value.utf8.count > 4096
                    || !value.utf8.allSatisfy({ $0 == 0x09 || (0x20...0x7E).contains($0) })
                {
                    "\(name): the value must be at most 4KiB of printable ASCII on one line"
                } else if Self.reservedHeaders.contains(lowered) {
                    "\(name) is written by bearerd (the upstream's Host, the token, the framing) or is hop-by-hop: it cannot be added"
                } else if forwarded && Self.forwardingHeaders.contains(lowered) {
                    "\(name) is set by proxy.forwarded_headers: turn that off to set it here"
                } else if headers.contains(where: { $0.name.lowercased() == lowered }) {
                    "\(name) is listed twice"
                } else {
                    nil
                }
            if let problem {
                self.issue(key.name, problem)
            } else {
                headers.append(.init(name: name, value: value))
            }
        }
        return headers
    }

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
