import ArgumentParser
import BearerdConfig

/// `bearerd config-reference`: the annotated example config, generated from the key
/// descriptors, so the documentation of every key is the code's.
struct ConfigReferenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-reference",
        abstract: "Print the annotated example config: every key, its default and what it does.",
        discussion: """
            config/bearerd.example.yaml is this output. With --installed, the config scripts/install \
            and the Debian package put in /etc/bearerd: the key as the unit's credential (--key-file \
            NAME, store.key by default) and, with --allow-group GROUP, the callers of that group and \
            root. With --fuzz-dictionary, prints the config fuzz target's dictionary instead \
            (fuzz/config.dict).
            """
    )

    @Flag(help: "Print the libFuzzer dictionary of the config syntax instead.")
    var fuzzDictionary = false

    @Flag(help: "Print the config an installation starts from.")
    var installed = false

    @Option(help: "With --installed: the store key's credential name.")
    var keyFile = "store.key"

    @Option(help: "With --installed: the group whose members may use the proxy (with root).")
    var allowGroup: String?

    func validate() throws {
        for value in [self.keyFile, self.allowGroup ?? "x"]
        where value.isEmpty || value.utf8.count > 64
            || !value.unicodeScalars.allSatisfy({
                $0.properties.isAlphabetic || "0123456789._-".unicodeScalars.contains($0)
            })
        {
            throw ValidationError("--key-file and --allow-group take a plain name (letters, digits, . _ -)")
        }
    }

    func run() {
        if self.fuzzDictionary { return print(ConfigReference.fuzzDictionary(), terminator: "") }
        var values: [String: String] = [:]
        if self.installed {
            values["store.key_file"] = self.keyFile
            if let group = self.allowGroup {
                values["socket_allow_uids"] = "[root]"
                values["socket_allow_gids"] = "[\(group)]"
            }
        }
        print(ConfigReference.exampleConfig(setting: values), terminator: "")
    }
}
