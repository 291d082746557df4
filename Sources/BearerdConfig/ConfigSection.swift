/// A part of the config file: its keys and subsections in the order the example config shows
/// them, with the paragraphs between them. ``ConfigSchema`` collects the sections; every key
/// the loader accepts is a key of one of them.
package struct ConfigSection: Sendable {
    /// One entry of a section, in order.
    package enum Item: Sendable {
        case key(ConfigKeyDescriptor)
        /// A `--- title ---` line above the items after it.
        case heading(String)
        /// A paragraph about the items after it.
        case note(String)
        case section(ConfigSection)
    }

    /// Dotted; empty for the top level.
    package let name: String
    /// The paragraph printed above `name:`.
    package let doc: String
    /// Printed as a comment (`# name:`): every key of it is optional and left out.
    package let commented: Bool
    package let items: [Item]

    init(_ name: String, doc: String = "", commented: Bool = false, _ items: [Item]) {
        self.name = name
        self.doc = doc
        self.commented = commented
        self.items = items
    }

    /// Every key of this section and its subsections, in order.
    package var keys: [ConfigKeyDescriptor] {
        self.items.flatMap { item -> [ConfigKeyDescriptor] in
            switch item {
            case .key(let key): [key]
            case .section(let section): section.keys
            case .heading, .note: []
            }
        }
    }

    /// This section's name and those of its subsections.
    package var sectionNames: [String] {
        let own = self.name.isEmpty ? [] : [self.name]
        return own
            + self.items.flatMap { item -> [String] in
                if case .section(let section) = item { section.sectionNames } else { [] }
            }
    }
}
