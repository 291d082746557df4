/// BearerdCLI's one error: a command (`serve`, `check-config`, `login`, `token`, …) that cannot do
/// its job. The message is for a person (whoever prints it to a terminal puts the program's name
/// before it) and says what to do next; ``keys`` names the config keys at fault for code
/// (`check-config`'s tests, and whoever wants to point at the line); ``code`` gives the exit
/// status. It never holds a token, a secret or a key.
struct CommandError: Error, CustomStringConvertible {
    /// Which kind it is, for code to compare and for the exit status. A struct over a private
    /// enum, as swift-service-lifecycle's `ServiceGroupError.Code`.
    struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Kind: Hashable, Sendable {
            case config, failed
        }

        private let kind: Kind

        /// The configuration, or something it names (a file, a key, the admin socket), cannot be
        /// used: exit 78 (`EX_CONFIG`), which systemd does not restart into the same fault.
        static let config = Code(kind: .config)
        /// The command ran and did not do its job: exit 1.
        static let failed = Code(kind: .failed)

        var description: String {
            switch self.kind {
            case .config: "config"
            case .failed: "failed"
            }
        }
    }

    /// Which kind it is.
    let code: Code
    /// The config keys at fault, in the order found; empty when the fault is no key's.
    let keys: [String]
    /// Every problem, for a person.
    let message: String
    /// The error this one reports, when it wraps one, for code to inspect; its text is never
    /// shown beyond ``message``.
    let underlying: (any Error)?

    var description: String { self.message }

    /// The process's exit status for this error.
    var exitCode: Int32 { self.code == .config ? 78 : 1 }

    /// A problem with the value of `key`: the message says what is wrong and what to do.
    init(key: String, _ message: String) {
        self.init(code: .config, keys: [key], message: "\(key): \(message)")
    }

    /// Problems with the values of `keys`, reported together in `message`.
    init(keys: [String], message: String) {
        self.init(code: .config, keys: keys, message: message)
    }

    /// A failure no single key is at fault for; `underlying`: the error it reports.
    init(_ message: String, code: Code = .failed, underlying: (any Error)? = nil) {
        self.init(code: code, keys: [], message: message, underlying: underlying)
    }

    private init(code: Code, keys: [String], message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.keys = keys
        self.message = message
        self.underlying = underlying
    }
}
