import BearerdAuth
import BearerdFiles
import BearerdProxy
import BearerdTokens
import BearerdWire
import Configuration
import Foundation
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads each key through the `ConfigReader`, parses it and collects an issue per bad value.
///
/// Each section reads through a reader scoped to it (``section(_:_:)``, as swift-configuration's
/// guide does for a library's settings: `proxy.max_request_line` is `max_request_line` in the
/// `proxy` scope). A key outside the scope, such as the top-level `allow_remote` a section
/// consults, is read from the root.
struct ConfigBuilder {
    /// The reader of the whole configuration.
    let root: ConfigReader
    /// The reader of the section being read, or the root.
    private(set) var reader: ConfigReader
    /// The section being read, as key components (`["auth", "json"]`); empty at the top.
    private(set) var scope: [String] = []
    let environment: [String: String]
    let baseDirectory: String
    var issues: [ConfigIssue]
    /// ``ConfigLoader/checksFiles``.
    var checksFiles = true
    /// `allow_insecure_http`: plain http to another machine for the upstream and token URLs.
    var allowInsecureHTTP = false

    mutating func build() -> BearerdConfiguration? {
        self.allowInsecureHTTP = self.bool(ConfigKeys.General.allowInsecureHTTP)
        let allowRemote = self.bool(ConfigKeys.General.allowRemote)
        let listen = self.listen(allowRemote: allowRemote)
        let upstream = self.section("upstream") { BearerdConfiguration.Upstream(reading: &$0) }
        // Every section is read even without an upstream, so that each problem is reported.
        let socketMode = self.parsed(
            ConfigKeys.General.socketMode,
            expected: "an octal file mode like 0660",
            ConfigValueParsers.fileMode
        )
        let socketGroup = self.socketGroup()
        let allowUIDs = self.ids(ConfigKeys.General.socketAllowUIDs) { getpwnam($0).map { $0.pointee.pw_uid } }
        let allowGIDs = self.ids(ConfigKeys.General.socketAllowGIDs) { getgrnam($0).map { $0.pointee.gr_gid } }
        let allowAnyUser = self.bool(ConfigKeys.General.socketAllowAnyUser)
        if allowRemote && !allowAnyUser && listen.contains(where: { !$0.isLoopback }) {
            self.issue(
                "socket_allow_any_user",
                "allow_remote serves callers on other hosts, whom the kernel cannot name, and socket_allow_uids/socket_allow_gids admit only callers on this host: set socket_allow_any_user: true as well (anyone who reaches the listener then acts with the token)"
            )
        }
        let threads = self.count(ConfigKeys.General.threads)
        let shutdownGrace = self.duration(ConfigKeys.General.shutdownGrace)
        let proxy = self.section("proxy") { BearerdConfiguration.Proxy(reading: &$0) }
        var auth = self.section("auth") { BearerdConfiguration.Auth(reading: &$0) }
        let store = self.section("store") { BearerdConfiguration.Store(reading: &$0) }
        let admin = self.section("admin") { BearerdConfiguration.Admin(reading: &$0) }
        let log = self.section("log") { BearerdConfiguration.Log(reading: &$0) }
        let tracing = self.section("tracing") { BearerdConfiguration.Tracing(reading: &$0) }
        let perCaller = self.bool(ConfigKeys.Callers.perCaller)
        let callers = self.section("callers") { BearerdConfiguration.Callers(reading: &$0, enabled: perCaller) }
        guard let upstream, let socketMode else { return nil }
        if case .oauth2(var client) = auth.source, client.discover {
            // The API itself names its authorization server (RFC 9728).
            client.resourceURL = upstream.target.description
            auth.source = .oauth2(client)
            if store.postgres != nil {
                self.issue(
                    "auth.discover",
                    "not with store.backend: postgres: a fleet shares one client, so set auth.issuer and auth.client_id"
                )
            }
        }
        var configuration = BearerdConfiguration(
            listen: listen,
            allowRemote: allowRemote,
            socketMode: socketMode,
            socketGroup: socketGroup,
            socketAllowUIDs: allowUIDs,
            socketAllowGIDs: allowGIDs,
            threads: threads,
            shutdownGrace: shutdownGrace,
            upstream: upstream,
            proxy: proxy,
            auth: auth,
            store: store,
            admin: admin,
            log: log
        )
        configuration.tracing = tracing
        configuration.socketAllowAnyUser = allowAnyUser
        configuration.callers = callers
        self.checkPerCaller(configuration)
        return configuration
    }

    // MARK: Sections

    private mutating func listen(allowRemote: Bool) -> [ListenAddress] {
        let entries = self.list(ConfigKeys.General.listen)
        if entries.isEmpty { self.issue("listen", "must name at least one address") }
        var seen: Set<ListenAddress> = []
        var addresses: [ListenAddress] = []
        for entry in entries {
            switch ListenAddress.parse(entry) {
            case .refused(let reason):
                self.issue("listen", reason)
            case .parsed(let address):
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

    /// A list of user or group names or numbers, resolved to ids.
    private mutating func ids(_ key: ConfigKeyDescriptor, _ lookUp: (String) -> UInt32?) -> Set<UInt32> {
        var ids: Set<UInt32> = []
        for entry in self.list(key) {
            if let id = UInt32(entry) ?? lookUp(entry) {
                ids.insert(id)
            } else {
                self.issue(key.name, "no user or group named \"\(entry)\" on this machine")
            }
        }
        return ids
    }

    private mutating func socketGroup() -> UInt32? {
        guard let text = self.string(ConfigKeys.General.socketGroup) else { return nil }
        if let gid = UInt32(text) { return gid }
        guard let group = getgrnam(text) else {
            self.issue("socket_group", "no group named \"\(text)\" on this machine")
            return nil
        }
        return group.pointee.gr_gid
    }

    // MARK: Scopes

    /// `body`'s reading of the section `name` within the current one, through a scoped reader;
    /// its issues are kept.
    mutating func section<Value>(_ name: String, _ body: (inout ConfigBuilder) -> Value) -> Value {
        var scoped = self
        scoped.reader = self.reader.scoped(to: ConfigKey([name]))
        scoped.scope = self.scope + [name]
        let value = body(&scoped)
        self.issues = scoped.issues
        return value
    }

    /// The key for the dotted name `key`, relative to the scope it lies in, and that scope's
    /// reader: the section's when the key is in it, else the root.
    private func locate(_ key: String) -> (ConfigReader, ConfigKey) {
        let components = key.split(separator: ".").map(String.init)
        guard !self.scope.isEmpty, components.count > self.scope.count,
            components.starts(with: self.scope)
        else { return (self.root, ConfigKey(components)) }
        return (self.reader, ConfigKey(Array(components.dropFirst(self.scope.count))))
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

    /// The value written for `key` (in the file or the environment), trimmed; `nil` when it is
    /// absent or empty.
    func string(_ key: String) -> String? {
        let (reader, relative) = self.locate(key)
        guard let value = reader.string(forKey: relative) else { return nil }
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        return trimmed.isEmpty ? nil : trimmed
    }

    /// Whether the user wrote a value for `key`.
    func isSet(_ key: ConfigKeyDescriptor) -> Bool { self.string(key.name) != nil }

    /// The value written for `key`, or else its declared default; `nil` when neither is there.
    func string(_ key: ConfigKeyDescriptor) -> String? {
        self.string(key.name) ?? key.defaultText.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The entries written for list `key`, or else its declared default.
    func list(_ key: ConfigKeyDescriptor) -> [String] {
        let (reader, relative) = self.locate(key.name)
        return reader.stringArray(forKey: relative) ?? key.defaultList
    }

    mutating func bool(_ key: ConfigKeyDescriptor) -> Bool {
        self.parsed(key, expected: "true or false", ConfigValueParsers.bool) ?? false
    }

    /// One of the words `key` declares, lower case.
    mutating func choice(_ key: ConfigKeyDescriptor) -> String? {
        guard case .choice(let words) = key.syntax else { return self.misdeclared(key) }
        let expected =
            words.count > 3
            ? "one of " + words.joined(separator: ", ")
            : words.dropLast().joined(separator: ", ") + " or " + (words.last ?? "")
        return self.parsed(key, expected: expected) { text in
            let lowered = text.lowercased()
            return words.contains(lowered) ? lowered : nil
        }
    }

    /// A duration within the range `key` declares: every duration key has one, so no value can
    /// overflow a timer or stop a loop for years.
    mutating func duration(_ key: ConfigKeyDescriptor) -> Duration {
        guard case .duration(let range) = key.syntax else { return self.misdeclared(key) ?? .zero }
        let written = self.parsed(
            key,
            expected: "a duration like 500ms, 5s, 2m or 1h, at most \(ConfigValueParsers.text(range.upperBound))",
            ConfigValueParsers.duration
        )
        let fallback = key.defaultText.flatMap(ConfigValueParsers.duration) ?? range.lowerBound
        guard let value = written else { return fallback }
        if !range.contains(value) {
            let low = ConfigValueParsers.text(range.lowerBound)
            let high = ConfigValueParsers.text(range.upperBound)
            self.issue(
                key.name,
                range.lowerBound == .zero
                    ? "must be at most \(high) (got \(ConfigValueParsers.text(value)))"
                    : "must be from \(low) to \(high) (got \(ConfigValueParsers.text(value)))"
            )
            return fallback
        }
        return value
    }

    /// A size in bytes (`64KiB`) within the range `key` declares.
    mutating func size(_ key: ConfigKeyDescriptor) -> Int {
        guard case .size(let range) = key.syntax else { return self.misdeclared(key) ?? 0 }
        let value = self.parsed(key, expected: "a size like 64KiB", ConfigValueParsers.size) ?? range.lowerBound
        if !range.contains(value) {
            let high = range.upperBound == Int.max ? "" : " to \(ConfigValueParsers.sizeText(range.upperBound))"
            self.issue(
                key.name,
                "must be from \(ConfigValueParsers.sizeText(range.lowerBound))\(high) (got \(value) bytes)"
            )
        }
        return value
    }

    /// A whole number within the range `key` declares.
    mutating func count(_ key: ConfigKeyDescriptor) -> Int {
        guard case .count(let range) = key.syntax else { return self.misdeclared(key) ?? 0 }
        let value = self.parsed(key, expected: "a whole number", ConfigValueParsers.count) ?? range.lowerBound
        if !range.contains(value) {
            self.issue(
                key.name,
                range.upperBound == Int.max
                    ? "must be at least \(range.lowerBound)"
                    : "must be from \(range.lowerBound) to \(range.upperBound) (got \(value))"
            )
        }
        return value
    }

    /// A list whose entries `normalize` accepts, as a set of their normal forms; each entry it
    /// refuses is an issue saying what `expected` is.
    mutating func normalizedSet(
        _ key: ConfigKeyDescriptor,
        _ normalize: (String) -> String?,
        _ expected: String
    ) -> Set<String> {
        var set: Set<String> = []
        for entry in self.list(key) {
            if let normalized = normalize(entry) {
                set.insert(normalized)
            } else {
                self.issue(key.name, "each entry must be \(expected) (got \"\(entry)\")")
            }
        }
        return set
    }

    /// The value written for `key`, or else its declared default, parsed; an issue saying what
    /// `expected` is when the written value does not parse, and then the default.
    mutating func parsed<Value>(
        _ key: ConfigKeyDescriptor,
        expected: String,
        _ parse: (String) -> Value?
    ) -> Value? {
        let fallback = key.defaultText.flatMap(parse)
        if key.defaultText.map({ !$0.isEmpty && fallback == nil }) ?? false {
            self.issue(key.name, "bearerd's own default does not parse as \(expected): please report this bug")
        }
        guard let text = self.string(key.name) else { return fallback }
        guard let value = parse(text) else {
            self.issue(key.name, "must be \(expected) (got \"\(text)\")")
            return fallback
        }
        return value
    }

    /// A key read as a syntax it was not declared with: a bug in bearerd, reported as an issue
    /// so that it fails every test that loads a config instead of stopping the daemon.
    private mutating func misdeclared<Value>(_ key: ConfigKeyDescriptor) -> Value? {
        self.issue(key.name, "bearerd reads this key as another syntax than it declares: please report this bug")
        return nil
    }

    /// ``SecretFileCheck/problem(path:groupMayRead:)``, unless files are not checked.
    func secretFileProblem(path: String, groupMayRead: Bool = false) -> String? {
        self.checksFiles ? SecretFileCheck.problem(path: path, groupMayRead: groupMayRead) : nil
    }

    /// Whether `path` cannot be read by this process (never, when files are not checked).
    func unreadable(_ path: String) -> Bool {
        self.checksFiles && access(path, R_OK) != 0
    }

    mutating func issue(_ key: String, _ message: String) {
        let name = ConfigSchema.environmentName(of: key)
        let shown = self.environment[name] != nil ? "\(key) (from \(name))" : key
        self.issues.append(ConfigIssue(key: shown, message: message))
    }
}
