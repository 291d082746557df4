/// What a reload asked for over the admin socket (`bearerd reload`, systemd's `ExecReload=`)
/// came to: the daemon answers only once the new config is live or refused.
package enum ReloadOutcome: Sendable, Equatable {
    /// The new config serves. Keys listed here changed but take effect at the next restart.
    case applied(restartPending: [String])
    /// The new config was refused, for this reason; the running one keeps serving.
    case refused(String)
}

extension AdminMessages {
    /// `POST /v1/reload`'s answer when the new config is live (a refusal is a ``Failure``,
    /// `config_refused`).
    package struct Reloaded: Codable, Sendable {
        package var reloaded: Bool
        /// Keys that changed but take effect at the next restart.
        package var restartPending: [String]

        package init(restartPending: [String]) {
            self.reloaded = true
            self.restartPending = restartPending
        }

        enum CodingKeys: String, CodingKey {
            case reloaded
            case restartPending = "restart_pending"
        }
    }
}
