import BearerdAuth

/// `auth.command*`: a program on the host that prints a token (kubectl's exec credentials,
/// `gcloud auth print-access-token`), run without a shell.
package struct CommandSettings: Sendable, Equatable {
    /// `auth.command`: the program (an absolute path, or a name looked up in `PATH`) and its
    /// arguments.
    package var argv: [String]
    /// `auth.command_env`: set in the child's environment on top of the daemon's.
    package var environment: [NameValue]
    /// `auth.command_directory`: where it runs; the daemon's own directory when `nil`.
    package var directory: String?
    /// `auth.command_timeout`: a run that has not ended by then is killed (its process group
    /// with it) and counts as an unavailable token server.
    package var timeout: Duration

    /// At most this much of its standard output is read: a token and its JSON.
    package static let outputLimit = 64 << 10

    package init(argv: [String], environment: [NameValue] = [], directory: String? = nil, timeout: Duration) {
        self.argv = argv
        self.environment = environment
        self.directory = directory
        self.timeout = timeout
    }

    /// The program's name as `status` and messages show it: `argv[0]`, never the arguments
    /// (which may hold a profile or account name, and are the config's business).
    package var program: String { self.argv.first ?? "" }
}
