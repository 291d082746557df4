import BearerdConfig
import BearerdFiles
import BearerdProxy
import BearerdWire
import NIOSSL

extension StartupChecks {
    /// What is wrong with `auth.tls_cert_file` and its key, read as the token client will read
    /// them: a key that is not the certificate's is found here, not at the first token request.
    static func clientCertificateProblem(_ certificate: ClientCertificateFiles?) -> String? {
        guard let certificate else { return nil }
        var tls = TLSConfiguration.makeClientConfiguration()
        do throws(ProxyError) {
            try certificate.apply(to: &tls)
            return nil
        } catch {
            return "\(error)"
        }
    }
}
