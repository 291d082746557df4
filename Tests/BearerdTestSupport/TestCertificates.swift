import Foundation

/// A throwaway certificate authority and a server certificate it signed, made with the
/// `openssl` command line tool in a temporary directory.
package struct TestCertificates: Sendable {
    /// The CA certificate (PEM): what a client must trust.
    package let caFile: String
    /// The server certificate (PEM).
    package let certificateFile: String
    /// The server's private key (PEM).
    package let keyFile: String
    private let directory: TemporaryDirectory
    /// The CA's private key (PEM), to sign client certificates with.
    package var caKeyFile: String { self.directory.path + "/ca.key" }

    /// Makes a CA and a server certificate for `dnsNames` and `ipAddresses`.
    package init(dnsNames: [String], ipAddresses: [String] = []) throws {
        let directory = try TemporaryDirectory()
        self.directory = directory
        let dir = directory.path
        self.caFile = dir + "/ca.pem"
        self.certificateFile = dir + "/server.pem"
        self.keyFile = dir + "/server.key"
        let names = dnsNames.map { "DNS:\($0)" } + ipAddresses.map { "IP:\($0)" }
        try directory.write("subjectAltName=\(names.joined(separator: ","))\n", to: "san.ext")
        try TestKeys.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=bearerd test CA",
            "-keyout", dir + "/ca.key", "-out", self.caFile,
        ])
        try TestKeys.openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=\(dnsNames.first ?? "server")",
            "-keyout", self.keyFile, "-out", dir + "/server.csr",
        ])
        try TestKeys.openssl([
            "x509", "-req", "-in", dir + "/server.csr", "-CA", self.caFile, "-CAkey", dir + "/ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", dir + "/san.ext", "-out", self.certificateFile,
        ])
    }
}
