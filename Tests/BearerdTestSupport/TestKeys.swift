import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Private keys and client certificates made with the `openssl` tool, for client authentication.
package enum TestKeys {
    /// Keys made once per test process and shared by the tests that only read them: making RSA
    /// keys is the costliest thing a unit test here does, and the suites all start at once.
    private static let shared = Mutex<(directory: TemporaryDirectory?, made: Set<String>)>((nil, []))

    /// The key `name` of `kind`, made on first use and the same for every caller afterwards.
    package static func shared(_ kind: String, named name: String) throws -> (privateKey: String, publicKey: String) {
        try Self.shared.withLock { state in
            let directory = try state.directory ?? TemporaryDirectory()
            state.directory = directory
            let key = "\(kind)-\(name)"
            if !state.made.contains(key) {
                try Self.make(kind, named: key, in: directory)
                state.made.insert(key)
            }
            return (directory.path + "/\(key).key", directory.path + "/\(key).pub")
        }
    }

    /// A private key (`rsa:BITS`, `ec` for P-256) and its public key, as PEM files in `directory`.
    @discardableResult
    package static func make(
        _ kind: String,
        named name: String,
        in directory: TemporaryDirectory
    ) throws -> (privateKey: String, publicKey: String) {
        let key = directory.path + "/\(name).key"
        let pub = directory.path + "/\(name).pub"
        if kind.hasPrefix("rsa:") {
            try openssl([
                "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:\(kind.dropFirst(4))", "-out", key,
            ])
        } else {
            try openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key])
        }
        chmod(key, 0o600)
        try openssl(["pkey", "-in", key, "-pubout", "-out", pub])
        return (key, pub)
    }

    /// A client certificate for `subject` (`/CN=…`) signed by the CA in `caCertificate`/`caKey`,
    /// with a new key; returns the certificate and key files.
    package static func clientCertificate(
        subject: String,
        named name: String,
        caCertificate: String,
        caKey: String,
        in directory: TemporaryDirectory
    ) throws -> (certificate: String, key: String) {
        let (key, _) = try Self.make("rsa:2048", named: name, in: directory)
        let csr = directory.path + "/\(name).csr"
        let certificate = directory.path + "/\(name).pem"
        try openssl(["req", "-new", "-key", key, "-subj", subject, "-out", csr])
        try openssl([
            "x509", "-req", "-in", csr, "-CA", caCertificate, "-CAkey", caKey, "-CAcreateserial", "-days", "2",
            "-out", certificate,
        ])
        return (certificate, key)
    }

    static func openssl(_ arguments: [String]) throws {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestClientError(
                "openssl \(arguments.prefix(2).joined(separator: " ")) failed: \(process.terminationStatus)"
            )
        }
    }
}
