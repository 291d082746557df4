import ArgumentParser
import BearerdStore

/// `bearerd keygen --out PATH`: a new key for the token store.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Write a new random key for the token store (32 bytes, mode 0400).",
        discussion: """
            Point store.key_file at it, or hand it to systemd as a credential \
            (LoadCredential= or, encrypted, LoadCredentialEncrypted= after systemd-creds encrypt). \
            An existing file is never replaced.
            """
    )

    @Option(name: .long, help: "Where to write the key.")
    var out: String

    func run() throws {
        do {
            try StoreKey.generate(to: self.out)
        } catch {
            StandardError.emit("bearerd: \(error)")
            throw ExitCode.failure
        }
        print("wrote a new store key to \(self.out) (mode 0400)")
    }
}
