import BearerdAuth
import BearerdFiles
import Foundation

/// A secret kept in a file of its own (`auth.client_secret_file`), read before each request that
/// sends it: a secret replaced in the file is used from the next token request on, without a
/// restart or a reload (a reload that said "live" while the old secret was still sent misled).
package struct SecretFile: Sendable, Equatable {
    package var path: String
    /// The config key that names the file, for messages.
    package var key: String
    /// What the file holds, for messages: "client secret", "refresh token".
    package var what: String

    package init(path: String, key: String, what: String = "secret") {
        self.path = path
        self.key = key
        self.what = what
    }

    /// The secret: the file's one line, at most 64 KiB, through a checked directory.
    /// - Throws: ``TokenEngineError/Code/source`` naming the key: the tokens are kept and the
    ///   request is tried again (a login fails with it).
    package func read() throws(TokenEngineError) -> Secret {
        // check-config's rule for a secret file, the one rule.
        if let problem = SecretFileCheck.problem(path: self.path) { throw .source("\(self.key): \(problem)") }
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: self.path, limit: 64 << 10)
        } catch {
            throw .source("\(self.key): cannot read \(self.path): \(error)")
        }
        guard let contents else {
            throw .source("\(self.key): \(self.path) does not exist: create it, or correct the path")
        }
        let value = String(decoding: contents.bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !value.isEmpty, !value.contains(where: \.isNewline) else {
            throw .source("\(self.key): \(self.path) must hold the \(self.what) alone, on one line")
        }
        return Secret(value)
    }
}
