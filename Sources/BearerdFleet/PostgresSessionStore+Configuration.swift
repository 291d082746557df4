import BearerdFiles
import BearerdTokens
import NIOSSL
import PostgresNIO

#if canImport(Glibc)
import Glibc
#endif

extension PostgresSessionStore {
    /// What `check-config` can say without connecting: whether the URL file and the TLS settings
    /// make a connection's settings.
    package static func check(_ settings: PostgresSettings) -> String? {
        do throws(FleetStoreError) {
            _ = try Self.configuration(try PostgresURL.read(settings.urlFile), settings)
            return nil
        } catch {
            return error.description
        }
    }

    /// The pool's settings: the URL's address and user, TLS as `store.postgres.sslmode` says, and
    /// server-side TCP keepalives, so that the lock of a host cut off without a goodbye ends in
    /// about 25 s instead of the kernel's two hours.
    static func configuration(
        _ url: PostgresURL,
        _ settings: PostgresSettings
    ) throws(FleetStoreError) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch url.address {
        case .socket(let path):
            configuration = .init(
                unixSocketPath: path,
                username: url.user,
                password: url.password?.value,
                database: url.database
            )
        case .tcp(let host, let port):
            configuration = .init(
                host: host,
                port: port,
                username: url.user,
                password: url.password?.value,
                database: url.database,
                tls: try Self.tls(settings, local: url.address.isLocal)
            )
        }
        configuration.options.connectTimeout = settings.connectTimeout
        // The listener, a refresh's lock and its writes (each on a connection of its own), a poll's
        // read and a verb's: a lock held while its write waits for a connection would stall.
        configuration.options.maximumConnections = 6
        configuration.options.additionalStartupParameters = [
            ("application_name", Self.applicationName(host: settings.hostName)),
            ("tcp_keepalives_idle", "10"),
            ("tcp_keepalives_interval", "5"),
            ("tcp_keepalives_count", "3"),
        ]
        return configuration
    }

    private static func tls(
        _ settings: PostgresSettings,
        local: Bool
    ) throws(FleetStoreError) -> PostgresClient.Configuration.TLS {
        switch settings.tls ?? (local ? .disable : .verifyFull) {
        case .disable:
            return .disable
        case .require:
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .none
            return .require(tls)
        case .verifyFull:
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.certificateVerification = .fullVerification
            if let caFile = settings.caFile {
                do {
                    // Read through a checked directory: a FIFO there is refused, not waited on.
                    guard let pem = try CheckedDirectory.read(file: caFile, limit: 1 << 20)?.bytes else {
                        throw FileCheckError.system("open", caFile, ENOENT)
                    }
                    tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(pem))
                } catch {
                    throw .config("store.postgres.ca_file", "cannot read the certificates in \(caFile): \(error)")
                }
            }
            return .require(tls)
        }
    }
}
