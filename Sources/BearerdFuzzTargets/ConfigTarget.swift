import BearerdConfig

/// The config loader on a YAML document and, after the first NUL, `NAME=value` lines taken as
/// the environment (`BEARERD_*` overrides). Paths in it point nowhere real: the base directory
/// does not exist, so no secret file is ever found, let alone read.
enum ConfigTarget {
    static func run(_ bytes: [UInt8]) -> String {
        let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let yaml = String(decoding: bytes[..<split], as: UTF8.self)
        var environment: [String: String] = [:]
        if split < bytes.endIndex {
            for line in String(decoding: bytes[(split + 1)...], as: UTF8.self).split(separator: "\n") {
                guard let equals = line.firstIndex(of: "=") else { continue }
                environment[String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        do {
            let configuration = try ConfigLoader(environment: environment)
                .load(yaml: yaml, source: "fuzz.yaml", baseDirectory: "/nonexistent/bearerd-fuzz")
            promise(!configuration.listen.isEmpty, "a valid config listens somewhere")
            return "loaded"
        } catch {
            promise(!error.issues.isEmpty, "a refused config names at least one problem")
            return "refused: " + error.issues.map(\.key).joined(separator: " ")
        }
    }
}
