import BearerdFleet
import BearerdProxy
import Foundation
import Yams

/// `sessions:`: several APIs, each with its own credential, in one daemon. Each session's keys
/// and the daemon-wide keys make one document, validated as a config file without sessions is,
/// and each problem is named by the key as the file spells it (`sessions.github.upstream.url`).
extension ConfigLoader {
    /// Keys at the top level that belong to the daemon, not to a session.
    static let daemonWideKeys: Set<String> = ["threads", "shutdown_grace", "admin", "metrics", "log", "tracing"]

    /// Loads the file at `path` as sessions: a file without `sessions:` is one session named
    /// `default`, exactly as ``load(path:)`` reads it.
    /// - Throws: ``ConfigError`` listing every problem of every session.
    package func loadSessions(path: String) throws(ConfigError) -> ConfiguredSessions {
        let (text, directory) = try Self.read(path)
        let sessions = try self.loadSessions(yaml: text, source: path, baseDirectory: directory)
        let exposed = sessions.entries.flatMap { entry in
            Self.readableCredentials(entry.configuration, path: path).map {
                ConfigIssue(
                    key: Self.spelled($0.key, session: sessions.isNamed ? entry.name : nil),
                    message: $0.message
                )
            }
        }
        guard exposed.isEmpty else { throw ConfigError(issues: exposed) }
        return sessions
    }

    /// Loads YAML text as sessions; relative file names resolve against `baseDirectory`.
    package func loadSessions(
        yaml: String,
        source: String,
        baseDirectory: String
    ) throws(ConfigError) -> ConfiguredSessions {
        let root = try Self.compose(yaml, source: source)
        guard case .mapping(let top)? = root, let sessionsNode = top["sessions"] else {
            let configuration = try self.load(root: root, source: source, baseDirectory: baseDirectory)
            return ConfiguredSessions(
                entries: [.init(name: ConfiguredSessions.defaultName, configuration: configuration)],
                isNamed: false
            )
        }
        var issues: [ConfigIssue] = []
        var daemon: [(Node, Node)] = []
        for (key, value) in top where key.string != "sessions" {
            guard let name = key.string, !Self.daemonWideKeys.contains(name) else {
                daemon.append((key, value))
                continue
            }
            issues.append(
                ConfigIssue(
                    key: name,
                    message:
                        "with sessions:, this key belongs to a session: move it into each session that needs it (sessions.NAME.\(name)); only \(Self.daemonWideKeys.sorted().joined(separator: ", ")) stay at the top"
                )
            )
        }
        // An environment override of a session's key would apply to every session alike.
        let daemonWide = Set(
            ConfigSchema.keys.keys.filter { Self.daemonWideKeys.contains(String($0.prefix { $0 != "." })) }
                .map(ConfigSchema.environmentName(of:))
        )
        let shared = self.environment.keys.filter { name in
            name.hasPrefix("BEARERD_") && !ConfigSchema.nonSettingEnvironment.contains(name)
                && !daemonWide.contains(name.uppercased())  // as the loader matches them
        }
        for name in shared.sorted() {
            issues.append(
                ConfigIssue(
                    key: name,
                    message:
                        "with sessions:, an environment variable cannot say which session it sets: write the key in the file under sessions.NAME"
                )
            )
        }
        guard case .mapping(let named) = sessionsNode, !named.isEmpty else {
            issues.append(
                ConfigIssue(
                    key: "sessions",
                    message: "must be a mapping of session names to their keys (listen, upstream, auth, store, proxy)"
                )
            )
            throw ConfigError(issues: issues)
        }
        var entries: [ConfiguredSessions.Entry] = []
        for (nameNode, body) in named {
            guard let name = nameNode.string, ConfiguredSessions.isValidName(name) else {
                issues.append(
                    ConfigIssue(
                        key: "sessions.\(nameNode.string ?? "?")",
                        message:
                            "a session's name is 1 to 32 of a-z, 0-9, - and _, starting with a letter (it labels metrics, log lines and store files)"
                    )
                )
                continue
            }
            guard case .mapping(let keys) = body else {
                issues.append(ConfigIssue(key: "sessions.\(name)", message: "must be a mapping of the session's keys"))
                continue
            }
            var document = daemon
            for (key, value) in keys {
                if let inner = key.string, Self.daemonWideKeys.contains(inner) {
                    issues.append(
                        ConfigIssue(
                            key: "sessions.\(name).\(inner)",
                            message: "is the daemon's, shared by every session: set it at the top level"
                        )
                    )
                } else {
                    document.append((key, value))
                }
            }
            document = Self.withSessionDefaults(
                document,
                name: name,
                stateDirectory: self.environment["STATE_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
            )
            var loader = self
            loader.environment = self.environment.filter { !shared.contains($0.key) }
            do {
                let configuration = try loader.load(
                    root: .mapping(Node.Mapping(document)),
                    source: source,
                    baseDirectory: baseDirectory
                )
                entries.append(.init(name: name, configuration: configuration))
            } catch {
                issues += error.issues.map {
                    ConfigIssue(key: Self.spelled($0.key, session: name), message: $0.message)
                }
            }
        }
        issues += Self.conflicts(entries)
        guard issues.isEmpty else { throw ConfigError(issues: issues) }
        return ConfiguredSessions(entries: entries.sorted { $0.name < $1.name }, isNamed: true)
    }

    /// A session's own store file unless it names one: `NAME.store` where the default
    /// `tokens.store` is (`$STATE_DIRECTORY` under systemd, else `/var/lib/bearerd`), an absolute
    /// path, so that the daemon and a verb run by hand (without `STATE_DIRECTORY`) mean one file;
    /// and its name as the store's profile (the fleet's row) unless it names one.
    static func withSessionDefaults(_ document: [(Node, Node)], name: String, stateDirectory: String?) -> [(Node, Node)]
    {
        var document = document
        let index = document.firstIndex { $0.0.string == "store" }
        var store: [(Node, Node)] = []
        if let index, case .mapping(let mapping) = document[index].1 { store = Array(mapping) }
        if !store.contains(where: { $0.0.string == "path" }) {
            store.append(("path", .init("\(stateDirectory ?? "/var/lib/bearerd")/\(name).store")))
        }
        if !store.contains(where: { $0.0.string == "profile" }) { store.append(("profile", .init(name))) }
        if let index {
            // A `store:` that is not a mapping is left for the loader to name.
            if case .mapping = document[index].1 { document[index].1 = .mapping(Node.Mapping(store)) }
        } else {
            document.append(("store", .mapping(Node.Mapping(store))))
        }
        return document
    }

    /// `key` as the file spells it: a session's keys under `sessions.NAME.`.
    package static func spelled(_ key: String, session: String?) -> String {
        guard let session else { return key }
        let top = String(key.prefix { $0 != "." })
        guard !Self.daemonWideKeys.contains(top), ConfigSchema.keys[key] != nil || ConfigSchema.sections.contains(top)
        else { return key }
        return "sessions.\(session).\(key)"
    }

    /// What two sessions may not share: a listener, a store file, a fleet row.
    static func conflicts(_ entries: [ConfiguredSessions.Entry]) -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        var listeners: [(address: ListenAddress, session: String)] = []
        var stores: [String: String] = [:]
        var rows: [String: String] = [:]
        for entry in entries {
            let configuration = entry.configuration
            for address in configuration.listen {
                if let other = listeners.first(where: { $0.address.collides(with: address) }) {
                    let what =
                        other.session == entry.name
                        ? "is this session's listener" : "is session \(other.session)'s listener"
                    issues.append(
                        ConfigIssue(
                            key: "sessions.\(entry.name).listen",
                            message:
                                "\(address) \(what) too (\(other.address) binds the same socket): a listener belongs to one session, once"
                        )
                    )
                }
                listeners.append((address, entry.name))
            }
            if let postgres = configuration.store.postgres {
                let row = "\(postgres.table) \(configuration.store.profile)"
                if let other = rows.updateValue(entry.name, forKey: row) {
                    issues.append(
                        ConfigIssue(
                            key: "sessions.\(entry.name).store.profile",
                            message:
                                "session \(other) keeps its session in the same row (\(postgres.table), profile \(configuration.store.profile)): give each session a store.profile of its own"
                        )
                    )
                }
            } else if configuration.store.isEncryptedOnDisk {
                if let other = stores.updateValue(
                    entry.name,
                    forKey: ListenAddress.normalPath(configuration.store.path)
                ) {
                    issues.append(
                        ConfigIssue(
                            key: "sessions.\(entry.name).store.path",
                            message:
                                "\(configuration.store.path) is session \(other)'s store too: give each session a file of its own"
                        )
                    )
                }
            }
        }
        return issues + Self.userStoreConflicts(entries)
    }

    /// A per_caller session's users' stores (`STEM.uid-UID.store`) may be no other session's
    /// store, and two per_caller sessions may not share a stem: one file would hold another
    /// session's user's tokens, sent to that session's API once the first let it go.
    static func userStoreConflicts(_ entries: [ConfiguredSessions.Entry]) -> [ConfigIssue] {
        var issues: [ConfigIssue] = []
        let stems = entries.filter { $0.configuration.callers.enabled }.map {
            (
                name: $0.name,
                stem: BearerdConfiguration.Callers.storeStem(ListenAddress.normalPath($0.configuration.store.path))
            )
        }
        for (index, own) in stems.enumerated() {
            if let other = stems[..<index].first(where: { $0.stem == own.stem }) {
                issues.append(
                    ConfigIssue(
                        key: "sessions.\(own.name).store.path",
                        message:
                            "session \(other.name) keeps its users' stores under the same name (\(own.stem).uid-UID.store): give each per_caller session a store.path of its own"
                    )
                )
            }
        }
        for entry in entries
        where entry.configuration.store.postgres == nil && entry.configuration.store.isEncryptedOnDisk {
            let path = ListenAddress.normalPath(entry.configuration.store.path)
            for own in stems where BearerdConfiguration.Callers.isUserStore(path, of: own.stem) {
                issues.append(
                    ConfigIssue(
                        key: "sessions.\(entry.name).store.path",
                        message:
                            "\(path) is the name of one of session \(own.name)'s users' stores: choose another store.path"
                    )
                )
            }
        }
        return issues
    }
}
