/// One problem in the configuration, named by its key.
package struct ConfigIssue: Sendable, Hashable, CustomStringConvertible {
    /// The dotted key, e.g. `upstream.url`, or the environment variable that set it.
    package var key: String
    /// What is wrong and what is expected.
    package var message: String

    /// Creates an issue.
    package init(key: String, message: String) {
        self.key = key
        self.message = message
    }

    package var description: String { "\(self.key): \(self.message)" }
}

/// The configuration is invalid; ``issues`` lists every problem found, not just the first.
package struct ConfigError: Error, Sendable, CustomStringConvertible {
    /// Every problem, in the order found.
    package var issues: [ConfigIssue]

    /// Creates an error from a non-empty list of issues.
    package init(issues: [ConfigIssue]) {
        self.issues = issues
    }

    /// One issue.
    package init(key: String, message: String) {
        self.issues = [ConfigIssue(key: key, message: message)]
    }

    package var description: String {
        self.issues.map(\.description).joined(separator: "\n")
    }
}
