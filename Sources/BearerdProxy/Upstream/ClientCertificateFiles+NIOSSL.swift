import BearerdFiles
import BearerdWire
import NIOSSL

#if canImport(Glibc)
import Glibc
#endif

extension ClientCertificateFiles {
    /// The largest certificate chain or key file read: a chain of a few certificates is some KiB.
    static let fileLimit = 256 << 10

    /// Reads both files (through a checked directory, as every secret) and sets them on `tls`.
    /// - Throws: ``ProxyError``, naming the key at fault and never the key's bytes.
    package func apply(to tls: inout TLSConfiguration) throws(ProxyError) {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(try Self.read(self.certificateFile, key: self.certificateKey))
        } catch let error as ProxyError {
            throw error
        } catch {
            throw ProxyError.setup(
                "\(self.certificateKey): \(self.certificateFile) holds no PEM certificate bearerd can read",
                underlying: error
            )
        }
        guard !chain.isEmpty else {
            throw ProxyError.setup("\(self.certificateKey): \(self.certificateFile) holds no PEM certificate")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(bytes: try Self.read(self.keyFile, key: self.keyKey, secret: true), format: .pem)
        } catch let error as ProxyError {
            throw error
        } catch {
            throw ProxyError.setup(
                "\(self.keyKey): \(self.keyFile) holds no unencrypted PEM private key bearerd can read",
                underlying: error
            )
        }
        tls.certificateChain = chain.map { .certificate($0) }
        tls.privateKey = .privateKey(key)
        // A key that is not the certificate's is found now, not at the first handshake.
        do {
            _ = try NIOSSLContext(configuration: tls)
        } catch {
            throw ProxyError.setup(
                "\(self.keyKey): \(self.keyFile) is not the private key of the certificate in \(self.certificateFile) (\(error))",
                underlying: error
            )
        }
    }

    /// `secret`: the file must be private (mode 0600 or stricter), as the config checks at start;
    /// a key renewed later with a wider mode is refused too, and the certificate in use stays.
    private static func read(_ path: String, key: String, secret: Bool = false) throws(ProxyError) -> [UInt8] {
        let contents: (bytes: [UInt8], mode: mode_t)?
        do throws(FileCheckError) {
            contents = try CheckedDirectory.read(file: path, limit: Self.fileLimit)
        } catch {
            throw ProxyError.setup("\(key): cannot read \(path): \(error)", underlying: error)
        }
        guard let contents else { throw ProxyError.setup("\(key): \(path) does not exist") }
        if secret && contents.mode & 0o077 != 0 {
            throw ProxyError.setup(
                "\(key): \(path) has mode 0\(String(contents.mode & 0o777, radix: 8)), so other users may read the private key: run chmod 600 \(path)"
            )
        }
        return contents.bytes
    }
}
