import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdTokens
import Foundation
import Logging
import Metrics
import Prometheus
import Synchronization

/// What the daemon sets up before its services run: the metrics exposition, the admin socket's
/// directory.
extension Daemon {
    /// The Prometheus text, with the token gauges brought up to date at each scrape; with
    /// `sessions:`, one series of each per session (`session="NAME"`), made when the session
    /// first shows and taken away when a reload stops it.
    static func exposition(
        _ registry: PrometheusCollectorRegistry,
        _ directory: SessionDirectory,
        named: Bool
    ) -> @Sendable () async -> String {
        let gauges = Mutex<[String: (expiry: Metrics.Gauge, valid: Metrics.Gauge)]>([:])
        return {
            let sessions = directory.all
            let current = gauges.withLock { gauges in
                for (name, _) in sessions where gauges[name] == nil {
                    let dimensions = named ? [("session", name)] : []
                    gauges[name] = (
                        Metrics.Gauge(label: "bearerd_token_expiry_seconds", dimensions: dimensions),
                        Metrics.Gauge(label: "bearerd_token_valid", dimensions: dimensions)
                    )
                }
                let gone = Set(gauges.keys).subtracting(sessions.map(\.name))
                for name in gone {
                    gauges[name]?.expiry.destroy()
                    gauges[name]?.valid.destroy()
                    gauges[name] = nil
                }
                return gauges
            }
            for (name, backend) in sessions {
                guard let (expiry, valid) = current[name] else { continue }
                switch backend {
                case .engine(let manager):
                    let status = await manager.status()
                    expiry.record(Double(status.expiresIn ?? 0))
                    valid.record(manager.currentToken() == nil ? 0 : 1)
                case .staticToken(let provider, _):
                    valid.record(provider.currentToken() == nil ? 0 : 1)
                case .perCaller, .noTokens:
                    // Each user's own: no one token's expiry to show (their refreshes are counted).
                    break
                }
            }
            return registry.emitToString()
        }
    }

    /// Creates the admin socket's directory, owner-only, when it is missing (systemd's
    /// `RuntimeDirectory=` makes it otherwise). Returns what is wrong, if anything.
    /// `openToCallers`: a session is per_caller, and other users must reach the socket: the
    /// directory is made searchable by them (0711).
    static func prepareDirectory(of socket: String, openToCallers: Bool = false) -> String? {
        let directory = URL(fileURLWithPath: socket).deletingLastPathComponent().path
        if FileManager.default.fileExists(atPath: directory) { return nil }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: openToCallers ? 0o711 : 0o700]
            )
            return nil
        } catch {
            return "cannot create \(directory): \(error.localizedDescription); create it or set admin.socket"
        }
    }
}
