import BearerdConfig
import BearerdFiles
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

extension ClientCertificateFiles {
    /// The largest certificate chain or key file read: a chain of a few certificates is some KiB.
    static let fileLimit = 256 << 10

    /// Reads both files (through a checked directory, as every secret) and sets them on `tls`.
    /// - Throws: ``ClientCertificateError``, naming the key at fault and never the key's bytes.
    package func apply(to tls: inout TLSConfiguration) throws(ClientCertificateError) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(try Self.read(self.certificateFile, key: self.certificateKey))
        } catch let error as ClientCertificateError {
            throw error
        } catch {
            throw ClientCertificateError(
                "\(self.certificateKey): \(self.certificateFile) holds no PEM certificate bearerd can read"
            )
        }
        guard !chain.isEmpty else {
            throw ClientCertificateError("\(self.certificateKey): \(self.certificateFile) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: try Self.read(self.keyFile, key: self.keyKey), format: .pem)
        } catch let error as ClientCertificateError {
            throw error
        } catch {
            throw ClientCertificateError(
                "\(self.keyKey): \(self.keyFile) holds no unencrypted PEM private key bearerd can read"
            )
        }
        tls.certificateChain = chain.map { .certificate($0) }
        tls.privateKey = .privateKey(key)
        // A key that is not the certificate's is found now, not at the first handshake.
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw ClientCertificateError(
                "\(self.keyKey): \(self.keyFile) is not the private key of the certificate in \(self.certificateFile) (\(error))"
            )
        }
    }

    private static func read(_ path: String, key: String) throws(ClientCertificateError) -> [UInt8] {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: Self.fileLimit)
        } catch {
            throw ClientCertificateError("\(key): cannot read \(path): \(error)")
        }
        guard let contents else { throw ClientCertificateError("\(key): \(path) does not exist") }
        return contents.bytes
    }
}

/// A client certificate or its key cannot be used; the message names the config key.
package struct ClientCertificateError: Error, Sendable, CustomStringConvertible {
    package let description: String

    init(_ description: String) {
        self.description = description
    }
}
