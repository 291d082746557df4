/// The sessions one config file defines: each a name and a whole configuration (its own
/// `listen`, `upstream`, `proxy`, `auth` and `store`, and the daemon-wide keys every session
/// shares). A file without `sessions:` is one session named `default`.
package struct ConfiguredSessions: Sendable {
    /// One session.
    package struct Entry: Sendable {
        package var name: String
        package var configuration: BearerdConfiguration
    }

    /// The sessions, sorted by name.
    package var entries: [Entry]
    /// Whether the file has a `sessions:` map (otherwise the one entry is `default`).
    package var isNamed: Bool

    /// The name of the session of a file without `sessions:`.
    package static let defaultName = "default"

    /// The sessions' names, in order.
    package var names: [String] { self.entries.map(\.name) }

    /// The session called `name`.
    package subscript(name: String) -> BearerdConfiguration? {
        self.entries.first { $0.name == name }?.configuration
    }

    /// The daemon-wide keys' values (the same in every entry): the first session's.
    package var daemon: BearerdConfiguration { self.entries[0].configuration }

    /// Whether `name` may name a session: 1 to 32 of a-z, 0-9, `-` and `_`, starting with a
    /// letter. It labels metrics, log lines and store files, so it is kept plain.
    package static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first),
            name.utf8.count <= 32
        else { return false }
        return name.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
        }
    }
}
