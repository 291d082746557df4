import BearerdConfig
import BearerdFiles
import BearerdTestSupport
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import NIOSSL
import Testing

@testable import BearerdProxy
@testable import BearerdWire

#if canImport(Glibc)
import Glibc
#endif

/// The upstream's client certificate is taken up from disk when it changes, at most once a
/// second by the event loop's clock, and a pair that does not match keeps the previous one.
@Suite("upstream.client_cert_file renewal")
struct UpstreamTLSTests {
    @Test func aRenewedCertificateIsTakenUpAndAHalfWrittenOneWaits() throws {
        let directory = try TemporaryDirectory()
        let ca = try TestCertificates(dnsNames: ["localhost"])
        let make = { (name: String) in
            try TestKeys.clientCertificate(
                subject: "/CN=upstream-client",
                named: name,
                caCertificate: ca.caFile,
                caKey: ca.caKeyFile,
                in: directory
            )
        }
        let first = try make("first")
        let second = try make("second")
        let files = ClientCertificateFiles(
            certificateFile: directory.path + "/client.pem",
            keyFile: directory.path + "/client.key",
            certificateKey: "upstream.client_cert_file",
            keyKey: "upstream.client_key_file"
        )
        try Self.put(first.certificate, files.certificateFile)
        try Self.put(first.key, files.keyFile)
        let logs = InMemoryLogHandler()
        let tls = try UpstreamTLS(
            base: .makeClientConfiguration(),
            certificate: files,
            logger: Logger(label: "test") { _ in logs }
        )
        let start = NIODeadline.now()
        let original = tls.context(now: start)
        #expect(tls.context(now: start + .seconds(2)) === original, "unchanged files, same context")

        // Half a renewal: the new key beside the old certificate.
        try Self.put(second.key, files.keyFile)
        #expect(tls.context(now: start + .milliseconds(2500)) === original, "within a second of the last look")
        #expect(tls.context(now: start + .seconds(4)) === original, "a key that is not the certificate's waits")
        #expect(logs.entries.contains { $0.message.description.contains("cannot be used") })

        // The certificate follows: the next look takes up the pair.
        try Self.put(second.certificate, files.certificateFile)
        let renewed = tls.context(now: start + .seconds(6))
        #expect(renewed !== original)
        #expect(tls.context(now: start + .seconds(8)) === renewed)
        #expect(logs.entries.contains { $0.message.description.contains("present the new one") })
    }

    /// A certificate file that is not PEM is refused with the key at fault, for a person, and
    /// NIOSSL's own error as the cause, for code.
    @Test func anUnreadableCertificateNamesItsKeyAndKeepsTheCause() throws {
        let directory = try TemporaryDirectory()
        let files = ClientCertificateFiles(
            certificateFile: try directory.write("not a certificate\n", to: "client.pem"),
            keyFile: try directory.write("not a key\n", to: "client.key"),
            certificateKey: "upstream.client_cert_file",
            keyKey: "upstream.client_key_file"
        )
        var tls = TLSConfiguration.makeClientConfiguration()
        #expect {
            try files.apply(to: &tls)
        } throws: { error in
            guard let error = error as? ProxyError else { return false }
            return error.code == .setup && error.what.hasPrefix("upstream.client_cert_file: ")
                && error.underlying is NIOSSLError
        }
    }

    /// Replaces `path` through a rename, as a renewal tool does.
    static func put(_ source: String, _ path: String) throws {
        try? FileManager.default.removeItem(atPath: path + ".new")
        try FileManager.default.copyItem(atPath: source, toPath: path + ".new")
        chmod(path + ".new", 0o600)
        guard rename(path + ".new", path) == 0 else { throw TestClientError("rename failed") }
    }
}
