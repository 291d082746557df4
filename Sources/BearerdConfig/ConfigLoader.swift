import Configuration
import Foundation
import Yams

/// Reads the YAML config file, lets `BEARERD_*` environment variables override any key, and
/// validates the result, reporting every problem with the key it concerns.
///
/// The file is parsed once with Yams to find unknown keys and wrong shapes; its values then feed
/// a swift-configuration `ConfigReader` under the environment provider, so `upstream.url` can be
/// overridden by `BEARERD_UPSTREAM_URL`.
package struct ConfigLoader: Sendable {
    /// Where `serve` and `check-config` look without `--config`.
    package static let defaultPath = "/etc/bearerd/bearerd.yaml"

    /// Every key the config file may set, dotted (`upstream.url`), sorted.
    package static var knownKeys: [String] { ConfigSchema.keys.keys.sorted() }

    /// The environment variables that set a key declared secret: swift-configuration redacts
    /// their values in access reports and logs.
    static let secretEnvironmentNames = Set(
        ConfigSchema.declared.values.filter(\.isSecret).map { ConfigSchema.environmentName(of: $0.name) }
    )

    /// The process environment (or a test's), for overrides and `$CREDENTIALS_DIRECTORY`.
    package var environment: [String: String]
    /// Whether the files the config names are checked (present, readable, not open to others).
    /// A verb that only talks to the running daemon reads the config as a user who may not read
    /// the daemon's secrets; whatever runs them checks them.
    package var checksFiles = true
    /// Told of every key the builder reads (swift-configuration's access reporting); the tests
    /// use it to show that every declared key is read.
    package var accessReporter: (any AccessReporter)?

    /// Creates a loader over an environment.
    package init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        accessReporter: (any AccessReporter)? = nil
    ) {
        self.environment = environment
        self.accessReporter = accessReporter
    }

    /// The text of the config file at `path`, and its directory (relative names in it are
    /// resolved there); an error that says whether it is missing or unreadable.
    static func read(_ path: String) throws(ConfigError) -> (text: String, directory: String) {
        do {
            let text = try String(contentsOfFile: path, encoding: .utf8)
            return (text, URL(fileURLWithPath: path).deletingLastPathComponent().path)
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw ConfigError(
                key: path,
                message: "the config file \(reason); create it from config/bearerd.example.yaml or pass --config PATH"
            )
        }
    }

    /// Loads and validates the file at `path`.
    /// - Throws: ``ConfigError`` listing every problem.
    package func load(path: String) throws(ConfigError) -> BearerdConfiguration {
        let (text, directory) = try Self.read(path)
        let configuration = try self.load(yaml: text, source: path, baseDirectory: directory)
        let exposed = Self.readableCredentials(configuration, path: path)
        guard exposed.isEmpty else { throw ConfigError(issues: exposed) }
        return configuration
    }

    /// Loads and validates YAML text; relative file names resolve against `baseDirectory`.
    package func load(yaml: String, source: String, baseDirectory: String) throws(ConfigError) -> BearerdConfiguration {
        try self.load(root: try Self.compose(yaml, source: source), source: source, baseDirectory: baseDirectory)
    }

    /// Where the daemon running the config at `path` answers (`admin.socket`) and keeps its
    /// store (`store.path`), read even when other keys have problems: `bearerd reload` lets the
    /// daemon judge a config this process cannot wholly check (systemd gives the credentials
    /// only to the service's own start). `nil` when the file is not YAML to read.
    package func daemonPaths(path: String) -> (socket: String, store: String)? {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return nil }
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard var (builder, _) = try? self.builder(yaml: text, source: path, baseDirectory: directory) else {
            return nil
        }
        let admin = BearerdConfiguration.Admin(reading: &builder)
        let store = BearerdConfiguration.Store(reading: &builder)
        return (admin.socket, store.path)
    }

    private func builder(
        yaml: String,
        source: String,
        baseDirectory: String
    ) throws(ConfigError) -> (ConfigBuilder, [any ConfigProvider]) {
        self.builder(root: try Self.compose(yaml, source: source), source: source, baseDirectory: baseDirectory)
    }

    /// The YAML document's tree; `nil` for an empty one.
    static func compose(_ yaml: String, source: String) throws(ConfigError) -> Node? {
        do {
            return try Yams.compose(yaml: yaml, .basic)
        } catch {
            throw ConfigError(key: source, message: "not valid YAML: \(Self.yamlProblem(error))")
        }
    }

    /// Validates the document `root` (one session's keys and the daemon's, see
    /// ``loadSessions(yaml:source:baseDirectory:)``) and returns the configuration.
    func load(root: Node?, source: String, baseDirectory: String) throws(ConfigError) -> BearerdConfiguration {
        var (builder, providers) = self.builder(root: root, source: source, baseDirectory: baseDirectory)
        guard var configuration = builder.build(), builder.issues.isEmpty else {
            throw ConfigError(issues: builder.issues)
        }
        configuration.written = WrittenValues(reading: ConfigReader(providers: providers))
        return configuration
    }

    private func builder(
        root: Node?,
        source: String,
        baseDirectory: String
    ) -> (ConfigBuilder, [any ConfigProvider]) {
        var issues: [ConfigIssue] = []
        var values: [AbsoluteConfigKey: ConfigValue] = [:]
        if let root {
            if case .mapping = root {
                Self.flatten(root, prefix: "", into: &values, issues: &issues)
            } else if root.null == nil {
                issues.append(ConfigIssue(key: source, message: "the top level must be a mapping of keys to values"))
            }
        }
        let ours = self.environment.filter { $0.key.hasPrefix("BEARERD_") }
        let known = Set(ConfigSchema.keys.keys.map(ConfigSchema.environmentName(of:)))
        for name in ours.keys.sorted()
        where !known.contains(name.uppercased()) && !ConfigSchema.nonSettingEnvironment.contains(name) {
            issues.append(
                ConfigIssue(
                    key: name,
                    message: "unknown setting in the environment; config/bearerd.example.yaml lists the keys"
                )
            )
        }
        let providers: [any ConfigProvider] = [
            EnvironmentVariablesProvider(
                environmentVariables: ours,
                secretsSpecifier: .specific(Self.secretEnvironmentNames)
            ).prefixKeys(with: "bearerd"),
            InMemoryProvider(name: source, values: values),
        ]
        let reader = ConfigReader(providers: providers, accessReporter: self.accessReporter)
        let builder = ConfigBuilder(
            root: reader,
            reader: reader,
            environment: self.environment,
            baseDirectory: baseDirectory,
            issues: issues,
            checksFiles: self.checksFiles
        )
        return (builder, providers)
    }

    /// Walks the YAML tree, keeping known keys as strings or string lists and reporting the rest.
    static func flatten(
        _ node: Node,
        prefix: String,
        into values: inout [AbsoluteConfigKey: ConfigValue],
        issues: inout [ConfigIssue]
    ) {
        guard case .mapping(let mapping) = node else { return }
        for (keyNode, valueNode) in mapping {
            guard let name = keyNode.string else {
                issues.append(
                    ConfigIssue(key: prefix.isEmpty ? "(top level)" : prefix, message: "keys must be strings")
                )
                continue
            }
            let key = prefix.isEmpty ? name : prefix + "." + name
            if valueNode.null != nil { continue }
            let isSecret = ConfigSchema.declared[key]?.isSecret ?? false
            switch (ConfigSchema.keys[key], valueNode) {
            case (.scalar, .scalar(let scalar)):
                values[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = ConfigValue(
                    .string(scalar.string),
                    isSecret: isSecret
                )
            case (.list, .scalar(let scalar)):
                values[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = ConfigValue(
                    .stringArray([scalar.string]),
                    isSecret: isSecret
                )
            case (.list, .sequence(let sequence)):
                let items = sequence.compactMap { item -> String? in
                    if case .scalar(let scalar) = item { return scalar.string }
                    return nil
                }
                guard items.count == sequence.count else {
                    issues.append(ConfigIssue(key: key, message: "must be a list of plain values"))
                    continue
                }
                values[AbsoluteConfigKey(key.split(separator: ".").map(String.init))] = ConfigValue(
                    .stringArray(items),
                    isSecret: isSecret
                )
            case (.scalar, _):
                issues.append(ConfigIssue(key: key, message: "must be a single value, not a list or mapping"))
            case (.list, _):
                issues.append(ConfigIssue(key: key, message: "must be a list of values"))
            case (nil, .mapping) where ConfigSchema.sections.contains(key):
                flatten(valueNode, prefix: key, into: &values, issues: &issues)
            case (nil, _) where ConfigSchema.sections.contains(key):
                issues.append(ConfigIssue(key: key, message: "must be a mapping of keys (a section)"))
            case (nil, _):
                let hint =
                    ConfigSchema.hints[key].map { "; \($0)" }
                    ?? ConfigSchema.suggestion(for: key).map { "; did you mean \($0)?" } ?? ""
                issues.append(ConfigIssue(key: key, message: "unknown key\(hint)"))
            }
        }
    }
}
