import BearerdAdmin
import BearerdAuth
import BearerdConfig
import BearerdStore
import BearerdTokens
import Foundation
import Logging
import Metrics
import Prometheus

/// What `serve` sets up before its services run: the store, the metrics exposition, the admin
/// socket's directory.
extension ServeCommand {
    /// The encrypted store when a key is configured, otherwise memory (with a warning). A store
    /// that cannot be used as it is (wrong key, modes, held by another daemon) stops the start;
    /// a damaged one has been moved aside by the store and bearerd starts logged out.
    static func openStore(_ configuration: BearerdConfiguration.Store, logger: Logger) throws -> any TokenStore {
        let key: StoreKey
        if let file = configuration.keyFile {
            key = .keyFile(file)
        } else if let file = configuration.passphraseFile {
            key = .passphraseFile(file)
        } else {
            logger.warning(
                "no store.key_file or store.passphrase_file: tokens are kept in memory only and a restart starts from auth.refresh_token_file"
            )
            return MemoryTokenStore()
        }
        let store = try EncryptedTokenStore(path: configuration.path, key: key, profile: configuration.profile)
        do {
            _ = try store.load()
        } catch let error as StoreError where error.code == .corrupted {
            logger.error("the token store is damaged; starting logged out", metadata: ["error": "\(error)"])
        }
        return store
    }

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
