import BearerdFiles

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension ConfigBuilder {
    /// Both keys or neither: the certificate readable, the key a secret file.
    mutating func clientCertificate(certificate certificateKey: String, key keyKey: String) -> ClientCertificateFiles? {
        let certificate = self.string(certificateKey).map(self.resolve)
        let key = self.string(keyKey).map(self.resolve)
        switch (certificate, key) {
        case (nil, nil):
            return nil
        case (_?, nil):
            self.issue(keyKey, "required with \(certificateKey): the certificate's private key (PEM, mode 0600)")
            return nil
        case (nil, _?):
            self.issue(certificateKey, "required with \(keyKey): the client certificate (PEM)")
            return nil
        case (let certificate?, let key?):
            if self.unreadable(certificate) {
                self.issue(certificateKey, "cannot read \(certificate): check that it exists and bearerd may read it")
            }
            if let problem = self.secretFileProblem(path: key) { self.issue(keyKey, problem) }
            return ClientCertificateFiles(
                certificateFile: certificate,
                keyFile: key,
                certificateKey: certificateKey,
                keyKey: keyKey
            )
        }
    }
}
