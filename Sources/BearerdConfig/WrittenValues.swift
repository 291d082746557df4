import Configuration

/// Each declared key's value as the config file and the environment give it, before any default
/// or check: what a reload compares, key by key, to say which changes wait for a restart
/// (``ConfigSchema/Reload``). Some values are secret, so neither its description nor its mirror
/// shows one.
package struct WrittenValues: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    private var values: [String: String]

    package init(_ values: [String: String] = [:]) {
        self.values = values
    }

    /// Reads every declared key through `reader` (one that reports no access: these reads are
    /// not the builder's); a list is its entries, one per line.
    init(reading reader: ConfigReader) {
        var values: [String: String] = [:]
        for (name, key) in ConfigSchema.declared {
            let configKey = ConfigKey(name)
            switch key.kind {
            case .scalar:
                values[name] = reader.string(forKey: configKey, isSecret: key.isSecret)
            case .list:
                values[name] = reader.stringArray(forKey: configKey, isSecret: key.isSecret)?.joined(separator: "\n")
            }
        }
        self.values = values
    }

    /// The value written for the dotted `key`; `nil` when none was.
    package subscript(key: String) -> String? {
        get { self.values[key] }
        set { self.values[key] = newValue }
    }

    /// The keys with a written value, sorted.
    package var keys: [String] { self.values.keys.sorted() }

    /// The keys written, never their values.
    package var description: String { "written: " + self.keys.joined(separator: ", ") }

    package var customMirror: Mirror { Mirror(self, children: KeyValuePairs<String, Any>()) }
}
