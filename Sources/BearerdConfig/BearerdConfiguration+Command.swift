import BearerdAuth
import BearerdTokens
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension BearerdConfiguration.Auth {
    /// `auth.command*`: ``CommandSettings``, owned by the token engine.
    package typealias Command = CommandSettings
}

extension CommandSettings {
    /// Reads and checks `auth.command` and the keys beside it. The program must be there and
    /// executable now, as `serve` will need it: an absolute path, a path relative to the config
    /// file's folder (`./get-token`), or a name found in `PATH`.
    init(reading builder: inout ConfigBuilder) {
        typealias Keys = ConfigKeys.Auth.Command
        let environment = builder.pairs(
            Keys.environment,
            separator: "=",
            example: "CLOUDSDK_CONFIG=/etc/bearerd/gcloud"
        )
        if environment.contains(where: { $0.name.utf8.contains(0) || $0.value.utf8.contains(0) }) {
            builder.issue(Keys.environment.name, "an entry holds a NUL byte")
        }
        // The program is looked up as it will be run: in the PATH the command gets.
        let path = environment.last { $0.name == "PATH" }?.value ?? builder.environment["PATH"]
        var argv = builder.list(Keys.command)
        if argv.isEmpty || argv[0].isEmpty {
            builder.issue(
                Keys.command.name,
                "must name a program: a list such as [\"gcloud\", \"auth\", \"print-access-token\"]"
            )
            argv = [""]
        } else if argv.contains(where: { $0.utf8.contains(0) }) {
            builder.issue(Keys.command.name, "an argument holds a NUL byte")
        } else if let problem = Self.locate(&argv[0], base: builder.baseDirectory, path: path) {
            builder.issue(Keys.command.name, problem)
        }
        var directory = builder.string(Keys.directory)
        if let path = directory, path.utf8.contains(0) {
            builder.issue(Keys.directory.name, "holds a NUL byte")
        } else if let path = directory {
            let resolved = Self.absolute(path, base: builder.baseDirectory)
            var info = stat()
            if stat(resolved, &info) != 0 || info.st_mode & S_IFMT != S_IFDIR {
                builder.issue(Keys.directory.name, "\(resolved) is not a directory: create it, or correct the path")
            }
            directory = resolved
        }
        self.init(
            argv: argv,
            environment: environment,
            directory: directory,
            timeout: builder.duration(Keys.timeout)
        )
    }

    /// Makes `program` the absolute path that will run (a name found in `path`'s absolute
    /// folders, as execvp would, so that what was checked is what runs); a message when there is
    /// none.
    static func locate(_ program: inout String, base: String, path: String?) -> String? {
        if program.contains("/") {
            program = Self.absolute(program, base: base)
            return Self.executableProblem(program)
        }
        let folders = (path ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
        for folder in folders where folder.hasPrefix("/") {
            let candidate = folder + "/" + program
            if Self.executableProblem(candidate) == nil {
                program = Self.absolute(candidate, base: "/")
                return nil
            }
        }
        return "no program \(program) in PATH (\(path ?? "unset")): give its absolute path"
    }

    /// `path`, relative to `base` unless it is absolute, without `.` and `..` steps.
    static func absolute(_ path: String, base: String) -> String {
        URL(fileURLWithPath: path, relativeTo: URL(fileURLWithPath: base, isDirectory: true)).standardizedFileURL.path
    }

    private static func executableProblem(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return "\(path) does not exist: install it, or correct the path" }
        guard info.st_mode & S_IFMT == S_IFREG else { return "\(path) is not a file" }
        guard access(path, X_OK) == 0 else { return "\(path) is not executable by this user: chmod +x it" }
        return nil
    }
}

extension ConfigKeys.Auth {
    /// `auth.command*`: a program on the host that prints the token.
    package enum Command {
        static let command = ConfigKeyDescriptor.list(
            "auth.command",
            "a program and its arguments",
            reload: .newSession,
            sample: .commented("[\"gcloud\", \"auth\", \"print-access-token\"]"),
            doc: """
                A program that prints the token, run without a shell: an absolute path, a path relative to
                this file's folder, or a name found in PATH, then its arguments. It may print the token alone
                on one line, kubectl's ExecCredential JSON (status.token, status.expirationTimestamp), or
                {"access_token": ..., "expires_in": ...} (or "expires_at"). Its expiry is that, else the
                token's own `exp`, else auth.default_lifetime. bearerd runs it a margin before expiry, one run
                at a time, with the engine's backoff; a non-zero exit, a timeout or more than 64 KiB of
                output keeps the current token and counts as an unavailable token server (`status` shows the
                program, its last exit and the first line of its standard error). Its output is never
                logged. Under systemd the unit's sandbox applies to it: see docs/command.md.
                """
        )
        static let environment = ConfigKeyDescriptor.list(
            "auth.command_env",
            "NAME=value pairs",
            reload: .newSession,
            secret: true,
            sample: .commented("[\"CLOUDSDK_CONFIG=/etc/bearerd/gcloud\"]"),
            doc:
                "Set in the command's environment, on top of bearerd's own, e.g. [\"CLOUDSDK_CONFIG=/etc/bearerd/gcloud\"]."
        )
        static let directory = ConfigKeyDescriptor.text(
            "auth.command_directory",
            "a folder",
            reload: .newSession,
            sample: .commented("/var/lib/bearerd"),
            doc: "The folder the command runs in (relative to this file's folder); bearerd's own otherwise."
        )
        static let timeout = ConfigKeyDescriptor.duration(
            "auth.command_timeout",
            default: "30s",
            within: .seconds(1)...(.seconds(600)),
            reload: .restart,
            sample: .commented("30s"),
            doc: "A run still going after this long is killed with its process group, and counts as a failure."
        )
    }
}
