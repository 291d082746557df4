import Configuration
import Foundation

/// `proxy.*`: limits, guards, lists and what passes to the upstream.
extension ConfigBuilder {
    mutating func proxy() -> BearerdConfiguration.Proxy {
        let policyText = self.string("proxy.client_authorization") ?? "replace"
        let policy = ClientAuthorizationPolicy(rawValue: policyText.lowercased())
        if policy == nil {
            self.issue("proxy.client_authorization", "must be replace, keep or reject (got \"\(policyText)\")")
        }
        var maxBody: Int?
        if let text = self.string("proxy.max_request_body"), text.lowercased() != "unlimited" {
            maxBody = self.parsed(
                "proxy.max_request_body",
                default: 0,
                expected: "a size like 10MiB",
                ConfigValueParsers.size
            )
            if maxBody == 0 { self.issue("proxy.max_request_body", "must be more than 0 (leave it out for no limit)") }
        }
        let maxHeader = self.size("proxy.max_header_size", default: 64 << 10, within: 1024...(1 << 20), "1KiB to 1MiB")
        let maxLine = self.size("proxy.max_request_line", default: 8 << 10, within: 256...(1 << 20), "256B to 1MiB")
        let maxCount = self.count("proxy.max_header_count", default: 100, within: 1...10_000)
        let maxConnections = self.count("proxy.max_connections", default: 512)
        let atLimit = (self.string("proxy.at_connection_limit") ?? "wait").lowercased()
        if atLimit != "wait" && atLimit != "refuse" {
            self.issue("proxy.at_connection_limit", "must be wait or refuse (got \"\(atLimit)\")")
        }
        let retryMethods = Set(
            (self.reader.stringArray(forKey: "proxy.retry_methods") ?? Self.defaultRetryMethods).map { $0.uppercased() }
        )
        for method in retryMethods where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            self.issue("proxy.retry_methods", "must list HTTP methods like GET or POST (got \"\(method)\")")
        }
        let upgrades = Set(
            (self.reader.stringArray(forKey: "proxy.allow_upgrades") ?? ["websocket"]).map { $0.lowercased() }
        )
        for name in upgrades where !Self.isUpgradeProtocol(name) {
            self.issue(
                "proxy.allow_upgrades",
                "must list protocol names like websocket, without a version (got \"\(name.prefix(40))\")"
            )
        }
        if upgrades.count > 16 { self.issue("proxy.allow_upgrades", "lists more than 16 protocols") }
        let origins = self.normalizedSet(
            "proxy.allowed_origins",
            Self.origin,
            "an origin like https://app.example.com or http://localhost:3000, without a path"
        )
        let hosts = self.normalizedSet(
            "proxy.allowed_hosts",
            Self.hostName,
            "a host name or address as clients send it in Host, like bearerd.internal or bearerd.internal:8080"
        )
        let keyFile = self.string("proxy.client_key_file").map(self.resolve)
        if let keyFile, let problem = SecretFileCheck.problem(path: keyFile) {
            self.issue("proxy.client_key_file", problem)
        }
        let keyHeader = (self.string("proxy.client_key_header") ?? "X-Bearerd-Key")
        if !keyHeader.utf8.allSatisfy({
            ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D
        })
            || ["authorization", "host", "cookie"].contains(keyHeader.lowercased())
        {
            self.issue(
                "proxy.client_key_header",
                "must be a header name of letters, digits and - (got \"\(keyHeader)\")"
            )
        }
        var methods: [String: Set<String>] = [:]
        for key in ["proxy.allow_methods", "proxy.deny_methods"] {
            let listed = Set((self.reader.stringArray(forKey: ConfigKey(key)) ?? []).map { $0.uppercased() })
            for method in listed where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
                self.issue(key, "must list HTTP methods like GET or DELETE (got \"\(method)\")")
            }
            methods[key] = listed
        }
        let allowPathParams = self.bool("proxy.allow_path_params", default: false)
        var paths: [String: [String]] = [:]
        for key in ["proxy.allow_paths", "proxy.deny_paths"] {
            var canonical: [String] = []
            for path in self.reader.stringArray(forKey: ConfigKey(key)) ?? [] {
                switch CanonicalTarget.parse(path, allowPathParams: allowPathParams) {
                case .success(let target) where target.query == nil:
                    canonical.append(target.path)
                case .success:
                    self.issue(key, "must list paths like /api/ or /admin, without a query (got \"\(path)\")")
                case .failure(let refusal):
                    self.issue(key, "must list paths like /api/ or /admin: \(refusal.reason) (got \"\(path)\")")
                }
            }
            paths[key] = canonical
        }
        return BearerdConfiguration.Proxy(
            clientAuthorization: policy ?? .replace,
            forwardedHeaders: self.bool("proxy.forwarded_headers", default: true),
            maxRequestBody: maxBody,
            maxHeaderSize: maxHeader,
            clientIdleTimeout: self.duration(
                "proxy.client_idle_timeout",
                default: .seconds(60),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            maxRequestLine: maxLine,
            maxHeaderCount: maxCount,
            maxConnections: maxConnections,
            refuseAtConnectionLimit: atLimit == "refuse",
            headerTimeout: self.duration(
                "proxy.header_timeout",
                default: .seconds(10),
                within: .milliseconds(100)...(.seconds(3600))
            ),
            bodyTimeout: self.duration(
                "proxy.body_timeout",
                default: .seconds(30),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            sendTimeout: self.duration(
                "proxy.send_timeout",
                default: .seconds(60),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            tokenWait: self.duration(
                "proxy.token_wait",
                default: .seconds(2),
                within: .milliseconds(10)...(.seconds(300))
            ),
            retryBodyLimit: self.parsed(
                "proxy.retry_body_limit",
                default: 64 << 10,
                expected: "a size like 64KiB (0: retry only requests without a body)",
                ConfigValueParsers.size
            ),
            retryMethods: retryMethods,
            allowUpgrades: upgrades,
            browserGuard: self.bool("proxy.browser_guard", default: true),
            allowedOrigins: origins,
            rebindingGuard: self.bool("proxy.rebinding_guard", default: true),
            allowedHosts: hosts,
            clientKeyFile: keyFile,
            clientKeyHeader: keyHeader,
            allowMethods: methods["proxy.allow_methods"] ?? [],
            denyMethods: methods["proxy.deny_methods"] ?? [],
            allowPaths: paths["proxy.allow_paths"] ?? [],
            denyPaths: paths["proxy.deny_paths"] ?? [],
            allowPathParams: allowPathParams,
            passOverrideHeaders: self.bool("proxy.pass_override_headers", default: false)
        )
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
