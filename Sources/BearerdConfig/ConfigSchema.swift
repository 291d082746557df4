/// Every key the config file and the environment may set. Anything else is an error, so a typo
/// never silently falls back to a default.
package enum ConfigSchema {
    /// The shape a key's value must have.
    package enum Kind: Sendable {
        case scalar
        case list
    }

    /// What a reload does with a changed value (``ReloadService`` warns of every key that is
    /// not applied; `RestartOnlyKeysTests` checks that it compares each of them).
    package enum Reload: Sendable, Equatable {
        /// Applied: new connections and the next refresh take the new value.
        case applies
        /// Made once at start (the token client, the store, the event loops, the admin and
        /// metrics listeners): the new value waits for a restart, and the reload says so.
        case restart
        /// As `restart`, and the stored tokens belong to the old value (another token server,
        /// client or store): the session would not follow a restart by itself.
        case newSession
    }

    /// The config file's sections in the order the example shows them; their descriptors are
    /// every key there is.
    package static let layout: [ConfigSection] =
        [
            ConfigKeys.General.section, ConfigKeys.Upstream.section, ConfigKeys.Proxy.section,
            ConfigKeys.Auth.section, ConfigKeys.Store.section, ConfigKeys.Callers.section,
        ] + ConfigKeys.Admin.sections + [ConfigKeys.Tracing.section]

    /// Every key's descriptor, by its dotted name.
    package static let declared: [String: ConfigKeyDescriptor] = Dictionary(
        layout.flatMap(\.keys).map { ($0.name, $0) },
        uniquingKeysWith: { first, _ in first }
    )

    /// Known keys, dotted, with their shape.
    static let keys: [String: Kind] = declared.mapValues(\.kind)

    /// What a reload does with a change of `key` (a dotted key ``keys`` has); `nil` for an
    /// unknown key.
    package static func reload(of key: String) -> Reload? { declared[key]?.reload }

    /// The keys whose reload behaviour is `reload`, sorted.
    package static func keys(reloading reload: Reload) -> [String] {
        declared.filter { $0.value.reload == reload }.keys.sorted()
    }

    /// Keys users write that bearerd deliberately does not have, with what to write instead.
    static let hints: [String: String] = [
        "auth.client_secret":
            "secrets are read from files: put it in a file of mode 0600 and set auth.client_secret_file (or pass a systemd credential)",
        "auth.refresh_token":
            "a refresh token is read from a file: set auth.refresh_token_file, or run `bearerd login --refresh-token-stdin`",
        "auth.password": "passwords are never stored: run `bearerd login`, which asks for it",
        "auth.username": "run `bearerd login`, which asks for the user name",
        "store.key": "the key is read from a file: create one with `bearerd keygen` and set store.key_file",
        "auth.token": "a static token is read from a file: set auth.static_token_file",
    ]

    /// Sections: keys that hold other keys.
    static let sections: Set<String> = Set(layout.flatMap(\.sectionNames))

    /// The environment variable that overrides `key`: `upstream.url` → `BEARERD_UPSTREAM_URL`.
    static func environmentName(of key: String) -> String {
        "BEARERD_" + key.uppercased().replacingDots()
    }

    /// Environment variables with the `BEARERD_` prefix that are not settings.
    static let nonSettingEnvironment: Set<String> = ["BEARERD_CONFIG"]

    /// The known key closest to `key`, for "did you mean" hints.
    static func suggestion(for key: String) -> String? {
        let candidates = (Array(keys.keys) + Array(sections)).map { ($0, editDistance(key, $0)) }
        guard let best = candidates.min(by: { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }) else { return nil }
        return best.1 <= max(2, key.count / 4) ? best.0 : nil
    }

    private static func editDistance(_ a: String, _ b: String) -> Int {
        let a = Array(a.utf8)
        let b = Array(b.utf8)
        var previous = Array(0...b.count)
        for (i, x) in a.enumerated() {
            var current = [i + 1]
            for (j, y) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (x == y ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }
}

extension String {
    fileprivate func replacingDots() -> String {
        String(self.map { $0 == "." ? "_" : $0 })
    }
}
