import Configuration
import Foundation

/// `proxy.*`: limits, guards, lists and what passes to the upstream.
extension ConfigBuilder {
    mutating func proxy() -> BearerdConfiguration.Proxy {
        typealias Keys = ConfigKeys.Proxy
        var maxBody: Int?
        if let text = self.string(Keys.maxRequestBody), text.lowercased() != "unlimited" {
            maxBody = self.parsed(Keys.maxRequestBody, expected: "a size like 10MiB", ConfigValueParsers.size)
            if maxBody == 0 { self.issue(Keys.maxRequestBody.name, "must be more than 0 (leave it out for no limit)") }
        }
        let retryMethods = Set(self.list(Keys.retryMethods).map { $0.uppercased() })
        for method in retryMethods where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
            self.issue(Keys.retryMethods.name, "must list HTTP methods like GET or POST (got \"\(method)\")")
        }
        let upgrades = Set(self.list(Keys.allowUpgrades).map { $0.lowercased() })
        for name in upgrades where !Self.isUpgradeProtocol(name) {
            self.issue(
                Keys.allowUpgrades.name,
                "must list protocol names like websocket, without a version (got \"\(name.prefix(40))\")"
            )
        }
        if upgrades.count > 16 { self.issue(Keys.allowUpgrades.name, "lists more than 16 protocols") }
        let origins = self.normalizedSet(
            Keys.allowedOrigins,
            Self.origin,
            "an origin like https://app.example.com or http://localhost:3000, without a path"
        )
        let hosts = self.normalizedSet(
            Keys.allowedHosts,
            Self.hostName,
            "a host name or address as clients send it in Host, like bearerd.internal or bearerd.internal:8080"
        )
        let keyFile = self.string(Keys.clientKeyFile).map(self.resolve)
        if let keyFile, let problem = SecretFileCheck.problem(path: keyFile) {
            self.issue(Keys.clientKeyFile.name, problem)
        }
        let keyHeader = self.string(Keys.clientKeyHeader) ?? ""
        if !keyHeader.utf8.allSatisfy({
            ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D
        })
            || ["authorization", "host", "cookie"].contains(keyHeader.lowercased())
        {
            self.issue(
                Keys.clientKeyHeader.name,
                "must be a header name of letters, digits and - (got \"\(keyHeader)\")"
            )
        }
        var methods: [String: Set<String>] = [:]
        for key in [Keys.allowMethods, Keys.denyMethods] {
            let listed = Set(self.list(key).map { $0.uppercased() })
            for method in listed where method.isEmpty || !method.allSatisfy({ $0.isLetter || $0 == "-" }) {
                self.issue(key.name, "must list HTTP methods like GET or DELETE (got \"\(method)\")")
            }
            methods[key.name] = listed
        }
        let allowPathParams = self.bool(Keys.allowPathParams)
        var paths: [String: [String]] = [:]
        for key in [Keys.allowPaths, Keys.denyPaths] {
            var canonical: [String] = []
            for path in self.list(key) {
                switch CanonicalTarget.parse(path, allowPathParams: allowPathParams) {
                case .success(let target) where target.query == nil:
                    canonical.append(target.path)
                case .success:
                    self.issue(key.name, "must list paths like /api/ or /admin, without a query (got \"\(path)\")")
                case .failure(let refusal):
                    self.issue(key.name, "must list paths like /api/ or /admin: \(refusal.reason) (got \"\(path)\")")
                }
            }
            paths[key.name] = canonical
        }
        return BearerdConfiguration.Proxy(
            clientAuthorization: self.choice(Keys.clientAuthorization).flatMap(ClientAuthorizationPolicy.init)
                ?? .replace,
            forwardedHeaders: self.bool(Keys.forwardedHeaders),
            maxRequestBody: maxBody,
            maxHeaderSize: self.size(Keys.maxHeaderSize),
            clientIdleTimeout: self.duration(Keys.clientIdleTimeout),
            maxRequestLine: self.size(Keys.maxRequestLine),
            maxHeaderCount: self.count(Keys.maxHeaderCount),
            maxConnections: self.count(Keys.maxConnections),
            refuseAtConnectionLimit: self.choice(Keys.atConnectionLimit) == "refuse",
            headerTimeout: self.duration(Keys.headerTimeout),
            bodyTimeout: self.duration(Keys.bodyTimeout),
            sendTimeout: self.duration(Keys.sendTimeout),
            tokenWait: self.duration(Keys.tokenWait),
            retryBodyLimit: self.size(Keys.retryBodyLimit),
            retryMethods: retryMethods,
            allowUpgrades: upgrades,
            browserGuard: self.bool(Keys.browserGuard),
            allowedOrigins: origins,
            rebindingGuard: self.bool(Keys.rebindingGuard),
            allowedHosts: hosts,
            clientKeyFile: keyFile,
            clientKeyHeader: keyHeader,
            allowMethods: methods[Keys.allowMethods.name] ?? [],
            denyMethods: methods[Keys.denyMethods.name] ?? [],
            allowPaths: paths[Keys.allowPaths.name] ?? [],
            denyPaths: paths[Keys.denyPaths.name] ?? [],
            allowPathParams: allowPathParams,
            passOverrideHeaders: self.bool(Keys.passOverrideHeaders)
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
