/// What a reload asked for over the admin socket (`bearerd reload`, systemd's `ExecReload=`)
/// came to: the daemon answers only once the new config is live or refused.
package enum ReloadOutcome: Sendable, Equatable {
    /// The new config serves. Keys listed here changed but take effect at the next restart.
    case applied(restartPending: [String])
    /// The new config has errors, given here; the running one keeps serving.
    case refused(String)
    /// The new config is valid but could not be applied (a listener that cannot bind, say);
    /// the running one keeps serving.
    case notApplied(String)
    /// With `sessions:`, some of the new config serves and some could not be applied (`failed`
    /// says which, each session so named keeps its running config); `restartPending` as in
    /// ``applied(restartPending:)``.
    case partlyApplied(failed: String, restartPending: [String])
}

extension AdminMessages {
    /// `POST /v1/reload`'s answer when the new config is live (otherwise a ``Failure``:
    /// `config_refused` or `reload_failed`).
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
