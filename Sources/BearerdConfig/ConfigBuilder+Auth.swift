import BearerdAuth
import Configuration
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension ConfigBuilder {
    /// A list of `name<separator>value` entries.
    mutating func pairs(
        _ key: ConfigKeyDescriptor,
        separator: Character,
        example: String
    ) -> [BearerdConfiguration.Auth.Pair] {
        var pairs: [BearerdConfiguration.Auth.Pair] = []
        for entry in self.list(key) {
            // A secret key's entries may hold a credential (an API key header): never echoed.
            let shown = key.isSecret ? "" : " (got \"\(entry)\")"
            guard let index = entry.firstIndex(of: separator) else {
                self.issue(key.name, "each entry must look like \"\(example)\"\(shown)")
                continue
            }
            let name = entry[..<index].trimmingCharacters(in: .whitespaces)
            let value = entry[entry.index(after: index)...].trimmingCharacters(in: .whitespaces)
            if name.isEmpty || name.contains(where: { $0 == " " || $0 == "\r" || $0 == "\n" })
                || value.contains(where: { $0 == "\r" || $0 == "\n" })
            {
                self.issue(key.name, "each entry must look like \"\(example)\"\(shown)")
                continue
            }
            pairs.append(.init(name: name, value: value))
        }
        return pairs
    }
}
