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
        if let tls = error as? NIOSSLError { return "TLS with \(target) failed: \(tls)" }
        return "\(error)"
    }
}
