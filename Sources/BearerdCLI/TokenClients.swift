import AsyncHTTPClient
import BearerdConfig
import BearerdFiles
import BearerdProxy
import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The token transport's HTTP client, made again when the client certificate's files change (a
/// renewal), so that a certificate rotated on disk is presented from the next request on.
final class TokenClients: Sendable {
    private struct Current {
        var client: HTTPClient
        /// The certificate files' stamp the client was made from.
        var stamp: [Int]
        /// The stamp of files that failed to load, not tried again until they change.
        var refused: [Int]?
    }

    private let caFile: String?
    private let certificate: ClientCertificateFiles?
    private let connectTimeout: Duration
    private let logger: Logger
    private let state: Mutex<Current>

    init(caFile: String?, certificate: ClientCertificateFiles?, connectTimeout: Duration, logger: Logger) throws {
        self.caFile = caFile
        self.certificate = certificate
        self.connectTimeout = connectTimeout
        self.logger = logger
        let stamp = certificate?.stamp() ?? []
        let client = try Self.makeClient(caFile: caFile, certificate: certificate, connectTimeout: connectTimeout)
        self.state = Mutex(Current(client: client, stamp: stamp))
    }

    /// The client to use now, and one it replaced that the caller shuts down.
    func current() -> (client: HTTPClient, retired: HTTPClient?) {
        guard let certificate = self.certificate else { return (self.state.withLock { $0.client }, nil) }
        let stamp = certificate.stamp()
        return self.state.withLock { current in
            guard stamp != current.stamp, stamp != current.refused else { return (current.client, nil) }
            do {
                let client = try Self.makeClient(
                    caFile: self.caFile,
                    certificate: certificate,
                    connectTimeout: self.connectTimeout
                )
                let retired = current.client
                current = Current(client: client, stamp: stamp)
                self.logger.notice(
                    "the token client's certificate changed on disk; presenting the new one",
                    metadata: ["file": "\(certificate.certificateFile)"]
                )
                return (client, retired)
            } catch {
                // Half-way through a renewal (the certificate written, not yet its key): the old
                // certificate serves until the files agree again.
                current.refused = stamp
                self.logger.warning(
                    "the token client's new certificate cannot be used; keeping the previous one",
                    metadata: ["error": "\(error)"]
                )
                return (current.client, nil)
            }
        }
    }

    func shutdown() async throws {
        try await self.state.withLock { $0.client }.shutdown()
    }

    private static func makeClient(
        caFile: String?,
        certificate: ClientCertificateFiles?,
        connectTimeout: Duration
    ) throws -> HTTPClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .certificates(try Self.certificates(in: caFile)) }
        try certificate?.apply(to: &tls)
        var configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: TimeAmount(connectTimeout)),
            decompression: .disabled
        )
        // A refused or unreachable token server fails at once instead of being retried until
        // the deadline (swift-server/async-http-client#743); the engine's backoff retries.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }

    /// `auth.ca_file`'s certificates, read now through a checked directory: a FIFO there is an
    /// error naming it, not a TLS handshake that waits for ever on an event loop (issue 35).
    private static func certificates(in caFile: String) throws -> [NIOSSLCertificate] {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: caFile, limit: 4 << 20)
        } catch {
            throw CommandError(key: "auth.ca_file", "\(error)")
        }
        guard let bytes = contents?.bytes else {
            throw CommandError(key: "auth.ca_file", "cannot find \(caFile): check the path")
        }
        do {
            return try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            throw CommandError(key: "auth.ca_file", "\(caFile) holds no PEM certificate bearerd can read (\(error))")
        }
    }
}
