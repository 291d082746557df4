import BearerdConfig
import BearerdFiles
import BearerdProxy
import BearerdTestSupport
import Foundation
import NIOSSL
import Testing

@testable import BearerdWire

/// A client certificate's key renewed on disk is read again without a restart: with the same
/// check as at start (issue 35: a renewed key was taken without the mode check config time does).
@Suite("Client certificate files")
struct ClientCertificateModeTests {
    @Test func aKeyOthersMayReadIsRefusedWhenItIsReadAgain() throws {
        let certificates = try TestCertificates(dnsNames: ["localhost"])
        let files = ClientCertificateFiles(
            certificateFile: certificates.certificateFile,
            keyFile: certificates.keyFile,
            certificateKey: "upstream.client_cert_file",
            keyKey: "upstream.client_key_file"
        )
        chmod(certificates.keyFile, 0o600)
        var tls = TLSConfiguration.makeClientConfiguration()
        try files.apply(to: &tls)
        // A renewal writes the key with the wrong mode.
        chmod(certificates.keyFile, 0o644)
        var renewed = TLSConfiguration.makeClientConfiguration()
        let error = #expect(throws: ProxyError.self) { try files.apply(to: &renewed) }
        let text = error.map { "\($0)" } ?? ""
        #expect(text.contains("upstream.client_key_file") && text.contains("mode 0644"), "\(text)")
        #expect(!text.contains("PRIVATE KEY"))
    }
}
