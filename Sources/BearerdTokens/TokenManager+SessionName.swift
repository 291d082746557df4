import BearerdAuth
import Foundation
import Metrics

/// A session of a config with `sessions:` says so: what it tells the user to run names it, and
/// its series carry its name.
extension TokenManager {
    /// `text` with each `bearerd login` it asks for naming this session.
    nonisolated func namingSession(_ text: String) -> String {
        guard let name = self.sessionName else { return text }
        return text.replacingOccurrences(of: "`bearerd login`", with: "`bearerd login --session \(name)`")
    }

    nonisolated func namingSession(_ error: TokenUnavailableError) -> TokenUnavailableError {
        guard self.sessionName != nil else { return error }
        return error.rewording { self.namingSession($0) }
    }

    /// The series' labels: `session="NAME"` in a config with `sessions:`, else none.
    package nonisolated var sessionDimensions: [(String, String)] {
        self.sessionName.map { [("session", $0)] } ?? []
    }

    /// `bearerd_token_refreshes_total{result="ok|rejected|transient|unverified"}`: every answer
    /// (or failure to get one) from the token endpoint, logins included.
    nonisolated func count(_ result: String) {
        Counter(label: "bearerd_token_refreshes_total", dimensions: [("result", result)] + self.sessionDimensions)
            .increment()
    }
}
