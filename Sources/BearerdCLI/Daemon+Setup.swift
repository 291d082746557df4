import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdTokens
import Foundation
import Logging
import Metrics
import Prometheus

/// What the daemon sets up before its services run: the metrics exposition, the admin socket's
/// directory.
extension Daemon {
    /// The Prometheus text, with the token gauges brought up to date at each scrape.
    static func exposition(
        _ registry: PrometheusCollectorRegistry,
        _ backend: AdminAPI.Backend
    ) -> @Sendable () async -> String {
        let expiry = Metrics.Gauge(label: "bearerd_token_expiry_seconds")
        let valid = Metrics.Gauge(label: "bearerd_token_valid")
        return {
            switch backend {
            case .engine(let manager):
                let status = await manager.status()
                expiry.record(Double(status.expiresIn ?? 0))
                valid.record(manager.currentToken() == nil ? 0 : 1)
            case .staticToken(let provider, _):
                valid.record(provider.currentToken() == nil ? 0 : 1)
            }
            return registry.emitToString()
        }
    }

    /// Creates the admin socket's directory, owner-only, when it is missing (systemd's
    /// `RuntimeDirectory=` makes it otherwise). Returns what is wrong, if anything.
    static func prepareDirectory(of socket: String) -> String? {
        let directory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
        if FileManager.default.fileExists(atPath: directory) { return nil }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
            return nil
        } catch {
            return "cannot create \(directory): \(error.localizedDescription); create it or set admin.socket"
        }
    }
}
