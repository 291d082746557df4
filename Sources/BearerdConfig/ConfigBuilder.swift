import BearerdAuth
import Configuration
import Foundation
import Logging

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
        let clientCertificate = self.clientCertificate(
            certificate: "upstream.client_cert_file",
            key: "upstream.client_key_file"
        )
        if target.scheme == .http {
            if clientCertificate != nil {
                self.issue("upstream.client_cert_file", "only applies to an https upstream")
            }
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
            clientCertificate: clientCertificate,
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

    private mutating func log() -> BearerdConfiguration.Log {
        let written = (self.string("log.level") ?? "info").lowercased()
        let level = Logger.Level(rawValue: written)
        if level == nil {
            let levels = Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")
            self.issue("log.level", "must be one of \(levels) (got \"\(written)\")")
        }
        return BearerdConfiguration.Log(
            level: level ?? .info,
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
        clientCertificate: nil,
        connectTimeout: .seconds(5),
        responseTimeout: .seconds(60),
        idleTimeout: .seconds(60),
        readTimeout: .seconds(60),
        maxIdleConnections: 0
    )
}
