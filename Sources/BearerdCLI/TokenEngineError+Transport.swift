import AsyncHTTPClient
import BearerdTokens
import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// A token request that did not get an HTTP answer (``TokenEngineError/Code/transport``): it
/// failed below HTTP, said in words ("connection refused", not NIO's "connection reset (error
/// set): Connection refused (errno: 111)"), or did not complete (connect, answer and body) within
/// `auth.request_timeout`.
extension TokenEngineError {
    /// `error`, from a request to `url`, in words.
    static func transport(_ error: any Error, url: String) -> Self {
        let target =
            url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: true).dropFirst().first
            .map(String.init) ?? url
        return .transport(Self.describe(error, target: target), underlying: error)
    }

    /// No complete answer within `timeout`.
    static func transport(timeout: Duration) -> Self {
        .transport("no complete answer within auth.request_timeout (\(timeout.components.seconds)s)")
    }

    private static func describe(_ error: any Error, target: String) -> String {
        if let connection = error as? NIOConnectionError, let first = connection.connectionErrors.first {
            return Self.describe(first.error, target: target)
        }
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return "connection refused by \(target): nothing listens there"
            case ENETUNREACH, EHOSTUNREACH: return "\(target) is unreachable from this machine"
            case ECONNRESET: return "\(target) reset the connection"
            case ETIMEDOUT: return "no connection to \(target) in time"
            default: return "cannot connect to \(target): \(String(cString: strerror(io.errnoCode)))"
            }
        }
        if let client = error as? HTTPClientError {
            switch client {
            case .connectTimeout: return "no connection to \(target) within auth.connect_timeout"
            case .remoteConnectionClosed: return "\(target) closed the connection before answering"
            case .readTimeout, .deadlineExceeded: return "no answer from \(target) in time"
            default: return "\(client)"
            }
        }
        if error is ChannelError, case ChannelError.connectTimeout = error {
            return "no connection to \(target) within auth.connect_timeout"
        }
        if let tls = error as? NIOSSLError { return Self.describeTLS("\(tls)", target: target) }
        if let extra = error as? NIOSSLExtraError, extra == .failedToValidateHostname {
            return
                "the certificate of \(target) is for another name: use the name it has in the URL, or ask for a certificate for this one"
        }
        return "\(error)"
    }

    /// A TLS failure in words, with BoringSSL's reason (`CERTIFICATE_VERIFY_FAILED`) and never
    /// its text, which names files of the build.
    static func describeTLS(_ text: String, target: String) -> String {
        let reason = Self.tlsReason(text)
        switch reason {
        case "CERTIFICATE_VERIFY_FAILED":
            return
                "the certificate of \(target) is not trusted (CERTIFICATE_VERIFY_FAILED): set auth.ca_file to the CA that signed it"
        case "WRONG_VERSION_NUMBER", "PACKET_LENGTH_TOO_LONG", "HTTP_REQUEST":
            return
                "\(target) does not answer in TLS (\(reason ?? "")): is it a plain http port? Check the URL's scheme and port"
        case let reason? where reason.contains("ALERT"):
            return
                "\(target) refused the TLS handshake (\(reason)): it may want a client certificate (auth.tls_cert_file) or another TLS version"
        case let reason?:
            return "TLS with \(target) failed (\(reason))"
        case nil:
            return "TLS with \(target) failed"
        }
    }

    /// The reason code of BoringSSL's first error (`…:OPENSSL_internal:REASON at …`).
    static func tlsReason(_ text: String) -> String? {
        guard let marker = text.range(of: "OPENSSL_internal:") else { return nil }
        let reason = text[marker.upperBound...].prefix { $0.isUppercase || $0.isNumber || $0 == "_" }
        return reason.isEmpty ? nil : String(reason.prefix(64))
    }
}
