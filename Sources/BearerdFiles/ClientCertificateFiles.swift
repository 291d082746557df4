#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A client certificate and its private key, as two PEM files (`auth.tls_cert_file` and
/// `auth.tls_key_file`, `upstream.client_cert_file` and `upstream.client_key_file`). The files are
/// read when a TLS context is made, so a renewed certificate is taken up without a restart.
package struct ClientCertificateFiles: Sendable, Equatable, Hashable {
    /// The certificate chain, leaf first.
    package var certificateFile: String
    /// The private key: a secret, so mode 0600 or stricter.
    package var keyFile: String
    /// The config keys, for messages.
    package var certificateKey: String
    package var keyKey: String

    package init(certificateFile: String, keyFile: String, certificateKey: String, keyKey: String) {
        self.certificateFile = certificateFile
        self.keyFile = keyFile
        self.certificateKey = certificateKey
        self.keyKey = keyKey
    }

    /// What identifies both files' current contents: a renewal that replaces either (a new inode,
    /// size or modification time) gives a new stamp.
    package func stamp() -> [Int] {
        [self.certificateFile, self.keyFile].flatMap { path -> [Int] in
            var info = stat()
            guard stat(path, &info) == 0 else { return [-1] }
            return [
                Int(truncatingIfNeeded: info.st_ino), Int(truncatingIfNeeded: info.st_size),
                Int(truncatingIfNeeded: info.st_mtim.tv_sec), Int(truncatingIfNeeded: info.st_mtim.tv_nsec),
                Int(truncatingIfNeeded: info.st_ctim.tv_sec), Int(truncatingIfNeeded: info.st_ctim.tv_nsec),
            ]
        }
    }
}
