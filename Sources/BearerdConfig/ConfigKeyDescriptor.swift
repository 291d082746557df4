/// One config key, declared once: its name, what it holds, its default, whether a reload
/// applies it, whether its value is secret, and the text that documents it. The loader, the
/// builder, reload, `bearerd config-reference` (and so `config/bearerd.example.yaml` and the
/// config fuzz target's seed and dictionary) all read these.
package struct ConfigKeyDescriptor: Sendable {
    /// What a key's value must be; the builder's readers take their range from here.
    package enum Syntax: Sendable {
        case bool
        /// A duration (`500ms`, `30s`, `2m`, `1h`) within the range.
        case duration(ClosedRange<Duration>)
        /// A size in bytes (`64KiB`) within the range.
        case size(ClosedRange<Int>)
        /// A whole number within the range.
        case count(ClosedRange<Int>)
        /// One of these words, in any letter case.
        case choice([String])
        /// Free text the builder checks itself (a URL, a file, a name), described in words.
        case text(String)
        /// A list whose entries the builder checks itself, described in words.
        case list(String)
    }

    /// How `config/bearerd.example.yaml` shows the key.
    package enum Sample: Sendable, Equatable {
        /// `key: DEFAULT`, the default written out.
        case `default`
        /// `key: VALUE`: a value the example sets (the key has no default, or its default
        /// depends on the machine).
        case set(String)
        /// `# key: VALUE`: an optional key, left out.
        case commented(String)
    }

    /// Dotted: `proxy.body_timeout`.
    package let name: String
    package let syntax: Syntax
    /// The value used when the key is absent, as the config file writes it; `nil`: none (the
    /// key is optional, or the builder derives its value from others).
    package let defaultText: String?
    /// The entries used when a list key is absent.
    package let defaultList: [String]
    package let reload: ConfigSchema.Reload
    /// Read with `isSecret: true`: its value never appears in a log line, an access report or a
    /// reload's message.
    package let isSecret: Bool
    package let sample: Sample
    /// What the key does, wrapped as the example prints it; empty when the paragraph of the key
    /// before it covers this one too.
    package let doc: String

    /// Whether the key holds one value or a list.
    package var kind: ConfigSchema.Kind {
        if case .list = self.syntax { .list } else { .scalar }
    }

    /// The last part of the name: `body_timeout`.
    package var leaf: Substring { self.name.split(separator: ".").last ?? Substring(self.name) }

    init(
        _ name: String,
        _ syntax: Syntax,
        default defaultText: String? = nil,
        list defaultList: [String] = [],
        reload: ConfigSchema.Reload,
        secret: Bool = false,
        sample: Sample = .default,
        doc: String
    ) {
        self.name = name
        self.syntax = syntax
        self.defaultText = defaultText
        self.defaultList = defaultList
        self.reload = reload
        self.isSecret = secret
        self.sample = sample
        self.doc = doc
    }
}

extension ConfigKeyDescriptor {
    /// `true` or `false`.
    static func bool(
        _ name: String,
        default value: Bool,
        reload: ConfigSchema.Reload,
        sample: Sample = .default,
        doc: String
    ) -> Self {
        Self(name, .bool, default: "\(value)", reload: reload, sample: sample, doc: doc)
    }

    /// A duration within `range`.
    static func duration(
        _ name: String,
        default value: String,
        within range: ClosedRange<Duration>,
        reload: ConfigSchema.Reload,
        sample: Sample = .default,
        doc: String
    ) -> Self {
        Self(name, .duration(range), default: value, reload: reload, sample: sample, doc: doc)
    }

    /// A file or other free text with no default.
    static func text(
        _ name: String,
        _ what: String,
        default value: String? = nil,
        reload: ConfigSchema.Reload,
        secret: Bool = false,
        sample: Sample = .default,
        doc: String
    ) -> Self {
        Self(name, .text(what), default: value, reload: reload, secret: secret, sample: sample, doc: doc)
    }

    /// A list whose entries are `what`.
    static func list(
        _ name: String,
        _ what: String,
        default entries: [String] = [],
        reload: ConfigSchema.Reload,
        secret: Bool = false,
        sample: Sample = .default,
        doc: String
    ) -> Self {
        Self(name, .list(what), list: entries, reload: reload, secret: secret, sample: sample, doc: doc)
    }
}
