import BearerdFiles
import BearerdWire
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// The TLS context for an https upstream. With a client certificate
/// (`upstream.client_cert_file`, `upstream.client_key_file`), the files are looked at, at most once
/// a second, when a new upstream connection is made: a renewed certificate is presented from then
/// on without a reload, and a pair that does not load yet (the certificate renewed, its key not
/// yet) keeps the previous context until both agree.
package final class UpstreamTLS: Sendable {
    private struct State {
        var context: NIOSSLContext
        var stamp: [Int]
        var refused: [Int]?
        var checkedAt: NIODeadline
    }

    /// How often the certificate's files are looked at, at most.
    static let checkInterval = TimeAmount.seconds(1)

    private let base: TLSConfiguration
    private let certificate: ClientCertificateFiles?
    private let logger: Logger
    private let state: Mutex<State>

    /// Builds the first context; a certificate or key that cannot be used throws, naming its key.
    init(base: TLSConfiguration, certificate: ClientCertificateFiles?, logger: Logger) throws {
        self.base = base
        self.certificate = certificate
        self.logger = logger
        let stamp = certificate?.stamp() ?? []
        let context = try Self.context(base, certificate)
        self.state = Mutex(State(context: context, stamp: stamp, checkedAt: .now()))
    }

    /// The context for a connection made at `now` (the event loop's time).
    func context(now: NIODeadline) -> NIOSSLContext {
        guard let certificate = self.certificate else { return self.state.withLock { $0.context } }
        return self.state.withLock { state in
            guard now - state.checkedAt >= Self.checkInterval else { return state.context }
            state.checkedAt = now
            let stamp = certificate.stamp()
            guard stamp != state.stamp, stamp != state.refused else { return state.context }
            do {
                state.context = try Self.context(self.base, certificate)
                state.stamp = stamp
                state.refused = nil
                self.logger.notice(
                    "the upstream client certificate changed on disk; new upstream connections present the new one",
                    metadata: ["file": "\(certificate.certificateFile)"]
                )
            } catch {
                state.refused = stamp
                self.logger.warning(
                    "the upstream client certificate's new files cannot be used; keeping the previous certificate",
                    metadata: ["error": "\(error)"]
                )
            }
            return state.context
        }
    }

    private static func context(
        _ base: TLSConfiguration,
        _ certificate: ClientCertificateFiles?
    ) throws -> NIOSSLContext {
        var tls = base
        try certificate?.apply(to: &tls)
        do {
            return try NIOSSLContext(configuration: tls)
        } catch {
            throw ProxyError.setup("cannot set up TLS for the upstream: \(error)", underlying: error)
        }
    }
}
