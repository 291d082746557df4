import ArgumentParser
import BearerdConfig

/// `bearerd config-reference`: the annotated example config, generated from the key
/// descriptors, so the documentation of every key is the code's.
struct ConfigReferenceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "config-reference",
        abstract: "Print the annotated example config: every key, its default and what it does.",
        discussion: """
            config/bearerd.example.yaml is this output. With --fuzz-dictionary, prints the config fuzz \
            target's dictionary instead (fuzz/config.dict).
            """
    )

    @Flag(help: "Print the libFuzzer dictionary of the config syntax instead.")
    var fuzzDictionary = false

    func run() {
        print(self.fuzzDictionary ? ConfigReference.fuzzDictionary() : ConfigReference.exampleConfig(), terminator: "")
    }
}
