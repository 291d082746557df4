import Yams

extension ConfigLoader {
    /// Where and why the text is not YAML, without the text itself: Yams's own description
    /// quotes the offending line, and that line may hold a secret (a header in
    /// `proxy.add_headers`, a parameter in `auth.extra_params`). The line and column are
    /// enough to find it.
    static func yamlProblem(_ error: any Error) -> String {
        guard let error = error as? YamlError else { return "the file cannot be parsed" }
        switch error {
        case .reader(let problem, let offset, _, let yaml):
            guard let offset, offset >= 0, offset <= yaml.utf8.count else { return problem }
            let before = yaml.utf8.prefix(offset)
            let line = before.count { $0 == UInt8(ascii: "\n") } + 1
            let column = before.reversed().prefix { $0 != UInt8(ascii: "\n") }.count + 1
            return "line \(line), column \(column): \(problem)"
        case .scanner(let context, let problem, let mark, _),
            .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            let within = context.map { " (\($0.text) at line \($0.mark.line), column \($0.mark.column))" } ?? ""
            return "line \(mark.line), column \(mark.column): \(problem)\(within)"
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Key names, never values.
            let names = duplicates.sorted().prefix(3).map { "\"\($0.prefix(64))\"" }.joined(separator: ", ")
            return "line \(context.mark.line): a key is given twice in one mapping: \(names)"
        case .dataCouldNotBeDecoded:
            return "the file is not UTF-8"
        case .no, .memory, .writer, .emitter, .representer:
            return "the file cannot be parsed"
        }
    }
}
