import BearerdAuth
import Configuration
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads each key through the `ConfigReader`, parses it and collects an issue per bad value.
struct ConfigBuilder {
    let reader: ConfigReader
    let environment: [String: String]
    let baseDirectory: String
    var issues: [ConfigIssue]
    /// `allow_insecure_http`: plain http to another machine for the upstream and token URLs.
    var allowInsecureHTTP = false

    mutating func build() -> BearerdConfiguration? {
        self.allowInsecureHTTP = self.bool("allow_insecure_http", default: false)
        let allowRemote = self.bool("allow_remote", default: false)
        let listen = self.listen(allowRemote: allowRemote)
        let upstream = self.upstream()
        let configuration = BearerdConfiguration(
            listen: listen,
            allowRemote: allowRemote,
            socketMode: self.parsed(
                "socket_mode",
                default: 0o600,
                expected: "an octal file mode like 0660",
                ConfigValueParsers.fileMode
            ),
            socketGroup: self.socketGroup(),
            socketAllowUIDs: self.ids("socket_allow_uids") { getpwnam($0).map { $0.pointee.pw_uid } },
            socketAllowGIDs: self.ids("socket_allow_gids") { getgrnam($0).map { $0.pointee.gr_gid } },
            threads: self.parsed(
                "threads",
                default: 0,
                expected: "a whole number (0: one per core)",
                ConfigValueParsers.count
            ),
            shutdownGrace: self.duration("shutdown_grace", default: .seconds(30), within: .zero...(.seconds(3600))),
            upstream: upstream ?? Self.placeholderUpstream,
            proxy: self.proxy(),
            auth: self.auth(),
            store: self.store(),
            admin: self.admin(),
            log: self.log()
        )
        return upstream == nil ? nil : configuration
    }

    // MARK: Sections

    private mutating func listen(allowRemote: Bool) -> [ListenAddress] {
        let entries = self.reader.stringArray(forKey: "listen") ?? ["127.0.0.1:8080"]
        if entries.isEmpty { self.issue("listen", "must name at least one address") }
        var seen: Set<ListenAddress> = []
        var addresses: [ListenAddress] = []
        for entry in entries {
            switch ListenAddress.parse(entry) {
            case .failure(let message):
                self.issue("listen", message.text)
            case .success(let address):
                if !address.isLoopback && !allowRemote {
                    self.issue(
                        "listen",
                        "\(address) is not a loopback address: anyone who can reach it would act with your token; set allow_remote: true if that is what you want"
                    )
                }
                if !seen.insert(address).inserted { self.issue("listen", "\(address) is listed twice") }
                addresses.append(address)
            }
        }
        return addresses
    }

    private mutating func upstream() -> BearerdConfiguration.Upstream? {
        guard let text = self.string("upstream.url") else {
            self.issue("upstream.url", "required: the http or https URL of the API to forward to")
            return nil
        }
        let target: UpstreamTarget
        switch UpstreamTarget.parse(text) {
        case .failure(let message):
            self.issue("upstream.url", message.text)
            return nil
        case .success(let parsed):
            target = parsed
        }
        let caFile = self.string("upstream.ca_file").map(self.resolve)
        let serverName = self.string("upstream.server_name")
        if target.scheme == .http,
            let refusal = PlainHTTP.refusal(url: target.description, allowInsecure: self.allowInsecureHTTP)
        {
            self.issue("upstream.url", refusal)
        }
        if target.scheme == .http {
            if caFile != nil { self.issue("upstream.ca_file", "only applies to an https upstream") }
            if serverName != nil { self.issue("upstream.server_name", "only applies to an https upstream") }
        }
        if let caFile, access(caFile, R_OK) != 0 {
            self.issue("upstream.ca_file", "cannot read \(caFile): check that it exists and bearerd may read it")
        }
        if let serverName, serverName.isEmpty || serverName.contains(where: { $0 == " " || $0 == "/" || $0 == ":" }) {
            self.issue("upstream.server_name", "must be a DNS name (got \"\(serverName)\")")
        }
        return BearerdConfiguration.Upstream(
            target: target,
            caFile: caFile,
            serverName: serverName,
            connectTimeout: self.duration(
                "upstream.connect_timeout",
                default: .seconds(5),
                within: .milliseconds(10)...(.seconds(300))
            ),
            responseTimeout: self.duration(
                "upstream.response_timeout",
                default: .seconds(60),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            idleTimeout: self.duration(
                "upstream.idle_timeout",
                default: .seconds(60),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            readTimeout: self.duration(
                "upstream.read_timeout",
                default: .seconds(60),
                within: .milliseconds(100)...(.seconds(86_400))
            ),
            maxIdleConnections: self.parsed(
                "upstream.max_idle_connections",
                default: 512,
                expected: "a whole number",
                ConfigValueParsers.count
            )
        )
    }

    private mutating func proxy() -> BearerdConfiguration.Proxy {
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

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber)
            && Int(text)! <= 65535
    }

    private mutating func log() -> BearerdConfiguration.Log {
        let levels = ["trace", "debug", "info", "notice", "warning", "error", "critical"]
        let level = (self.string("log.level") ?? "info").lowercased()
        if !levels.contains(level) {
            self.issue("log.level", "must be one of \(levels.joined(separator: ", ")) (got \"\(level)\")")
        }
        return BearerdConfiguration.Log(
            level: level,
            access: self.bool("log.access", default: true),
            accessQuery: self.bool("log.access_query", default: false)
        )
    }

    /// A list of user or group names or numbers, resolved to ids.
    private mutating func ids(_ key: String, _ lookUp: (String) -> UInt32?) -> Set<UInt32> {
        var ids: Set<UInt32> = []
        for entry in self.reader.stringArray(forKey: ConfigKey(key)) ?? [] {
            if let id = UInt32(entry) ?? lookUp(entry) {
                ids.insert(id)
            } else {
                self.issue(key, "no user or group named \"\(entry)\" on this machine")
            }
        }
        return ids
    }

    private mutating func socketGroup() -> UInt32? {
        guard let text = self.string("socket_group"), !text.isEmpty else { return nil }
        if let gid = UInt32(text) { return gid }
        guard let group = getgrnam(text) else {
            self.issue("socket_group", "no group named \"\(text)\" on this machine")
            return nil
        }
        return group.pointee.gr_gid
    }

    // MARK: Values

    /// A relative file name resolves in `$CREDENTIALS_DIRECTORY` when systemd provides one,
    /// otherwise next to the config file.
    func resolve(_ path: String) -> String {
        if path.hasPrefix("/") { return path }
        let directory =
            self.environment["CREDENTIALS_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 } ?? self.baseDirectory
        return directory + "/" + path
    }

    func string(_ key: String) -> String? {
        guard let value = self.reader.string(forKey: ConfigKey(key)) else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    mutating func bool(_ key: String, default defaultValue: Bool) -> Bool {
        self.parsed(key, default: defaultValue, expected: "true or false", ConfigValueParsers.bool)
    }

    /// A duration within `range`: every duration key has one, so no value can overflow a timer
    /// or stop a loop for years.
    mutating func duration(
        _ key: String,
        default defaultValue: Duration,
        within range: ClosedRange<Duration>
    )
        -> Duration
    {
        let value = self.parsed(
            key,
            default: defaultValue,
            expected: "a duration like 500ms, 5s, 2m or 1h, at most \(ConfigValueParsers.text(range.upperBound))",
            ConfigValueParsers.duration
        )
        if !range.contains(value) {
            let low = ConfigValueParsers.text(range.lowerBound)
            let high = ConfigValueParsers.text(range.upperBound)
            self.issue(
                key,
                range.lowerBound == .zero
                    ? "must be at most \(high) (got \(ConfigValueParsers.text(value)))"
                    : "must be from \(low) to \(high) (got \(ConfigValueParsers.text(value)))"
            )
            return defaultValue
        }
        return value
    }

    /// A list whose entries `normalize` accepts, as a set of their normal forms; each entry it
    /// refuses is an issue saying what `expected` is.
    mutating func normalizedSet(_ key: String, _ normalize: (String) -> String?, _ expected: String) -> Set<String> {
        var set: Set<String> = []
        for entry in self.reader.stringArray(forKey: ConfigKey(key)) ?? [] {
            if let normalized = normalize(entry) {
                set.insert(normalized)
            } else {
                self.issue(key, "each entry must be \(expected) (got \"\(entry)\")")
            }
        }
        return set
    }

    /// A size in bytes (`64KiB`) within `range`, which `rangeText` says in words.
    mutating func size(
        _ key: String,
        default defaultValue: Int,
        within range: ClosedRange<Int>,
        _ rangeText: String
    )
        -> Int
    {
        let value = self.parsed(key, default: defaultValue, expected: "a size like 64KiB", ConfigValueParsers.size)
        if !range.contains(value) { self.issue(key, "must be from \(rangeText) (got \(value) bytes)") }
        return value
    }

    /// A whole number within `range`.
    mutating func count(_ key: String, default defaultValue: Int, within range: ClosedRange<Int> = 1...Int.max) -> Int {
        let value = self.parsed(key, default: defaultValue, expected: "a whole number", ConfigValueParsers.count)
        if !range.contains(value) {
            self.issue(
                key,
                range.upperBound == Int.max
                    ? "must be at least \(range.lowerBound)"
                    : "must be from \(range.lowerBound) to \(range.upperBound) (got \(value))"
            )
        }
        return value
    }

    mutating func parsed<Value>(
        _ key: String,
        default defaultValue: Value,
        expected: String,
        _ parse: (String) -> Value?
    ) -> Value {
        guard let text = self.string(key) else { return defaultValue }
        guard let value = parse(text) else {
            self.issue(key, "must be \(expected) (got \"\(text)\")")
            return defaultValue
        }
        return value
    }

    mutating func issue(_ key: String, _ message: String) {
        let name = ConfigSchema.environmentName(of: key)
        let shown = self.environment[name] != nil ? "\(key) (from \(name))" : key
        self.issues.append(ConfigIssue(key: shown, message: message))
    }

    static let defaultRetryMethods = ["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "POST", "PATCH"]

    private static let placeholderUpstream = BearerdConfiguration.Upstream(
        target: UpstreamTarget(scheme: .http, host: "invalid", port: 80, basePath: "", hostHeader: "invalid"),
        caFile: nil,
        serverName: nil,
        connectTimeout: .seconds(5),
        responseTimeout: .seconds(60),
        idleTimeout: .seconds(60),
        readTimeout: .seconds(60),
        maxIdleConnections: 0
    )
}
