/// One problem in the configuration, named by its key.
public struct ConfigIssue: Sendable, Hashable, CustomStringConvertible {
    /// The dotted key, e.g. `upstream.url`, or the environment variable that set it.
    public var key: String
    /// What is wrong and what is expected.
    public var message: String

    /// Creates an issue.
    public init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    public var description: String { "\(self.key): \(self.message)" }
}

/// The configuration is invalid; ``issues`` lists every problem found, not just the first.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// Every problem, in the order found.
    public var issues: [ConfigIssue]

    /// Creates an error from a non-empty list of issues.
    public init(issues: [ConfigIssue]) {
        self.issues = issues
    }

    /// One issue.
    public init(key: String, message: String) {
        self.issues = [ConfigIssue(key: key, message: message)]
    }

    public var description: String {
        self.issues.map(\.description).joined(separator: "\n")
    }
}
