import BearerdAuth
import BearerdProxy
import BearerdTokens

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ConfigLoader {
    /// Words in a parameter's or header's name that say its value is a credential.
    static let secretWords = ["secret", "key", "token", "passw", "credential"]

    /// The name/value keys whose values go to a server as written in the config file, each with
    /// the names it holds: a credential among them is as readable as the file.
    static func writtenCredentials(_ configuration: BearerdConfiguration) -> [(key: String, name: String)] {
        var found: [(key: String, name: String)] = []
        for header in configuration.proxy.addHeaders { found.append(("proxy.add_headers", header.name)) }
        switch configuration.auth.source {
        case .oauth2(let client):
            for pair in client.extraParameters { found.append(("auth.extra_params", pair.name)) }
            for pair in client.authorization.parameters { found.append(("auth.authorization_params", pair.name)) }
        case .json(let json):
            for header in json.headers { found.append(("auth.json.headers", header.name)) }
        case .command(let command):
            for pair in command.environment { found.append(("auth.command_env", pair.name)) }
        case .staticFile:
            break
        }
        return found.filter { entry in
            let name = entry.name.lowercased()
            return Self.secretWords.contains { name.contains($0) }
        }
    }

    /// An issue for each parameter or header whose name says it holds a credential, when the
    /// config file at `path` may be read by users other than its owner and group: whoever can
    /// read the file has the credential. Names only; never a value.
    static func readableCredentials(_ configuration: BearerdConfiguration, path: String) -> [ConfigIssue] {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o004 != 0 else { return [] }
        let mode = String(info.st_mode & 0o777, radix: 8)
        return Self.writtenCredentials(configuration).map { entry in
            ConfigIssue(
                key: entry.key,
                message:
                    "\(entry.name) holds a credential, and \(path) may be read by every user (mode 0\(mode)): make the file readable by bearerd alone (chmod 640 \(path), or 600), or keep the credential in a file of mode 0600 (auth.client_secret_file, proxy.client_key_file)"
            )
        }
    }
}
