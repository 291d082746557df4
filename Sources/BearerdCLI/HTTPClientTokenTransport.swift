import AsyncHTTPClient
import BearerdConfig
import BearerdProxy
import BearerdTokens
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// Talks to token endpoints with async-http-client: its own client, no redirects followed (a
/// redirect would carry credentials somewhere unplanned), no decompression, bounded answers.
/// With a client certificate (`auth.tls_cert_file`), a renewed certificate is taken up at the
/// next request: the files are looked at before each one, and a client with the new certificate
/// replaces the old.
package struct HTTPClientTokenTransport: TokenTransport {
    /// Answers larger than this are an error; token responses are a few KiB.
    static let maxBody = 1 << 20

    let clients: TokenClients
    /// For each whole exchange: connect, request, response head and body.
    let timeout: Duration

    /// - Parameters:
    ///   - caFile: PEM bundle to trust instead of the system's roots (`auth.ca_file`).
    ///   - clientCertificate: presented to the token server (`auth.tls_cert_file`, RFC 8705).
    ///   - timeout: for each whole request, its body included (`auth.request_timeout`).
    ///   - connectTimeout: for connecting, tried once (`auth.connect_timeout`).
    /// - Throws: ``ProxySetupError`` when the certificate or its key cannot be used.
    package init(
        caFile: String?,
        clientCertificate: ClientCertificateFiles? = nil,
        timeout: Duration,
        connectTimeout: Duration = .seconds(2),
        logger: Logger = Logger(label: "bearerd.token-client")
    ) throws {
        self.clients = try TokenClients(
            caFile: caFile,
            certificate: clientCertificate,
            connectTimeout: connectTimeout,
            logger: logger
        )
        self.timeout = timeout
    }

    /// Sends `request` and collects the answer, all within `timeout`: a server that sends its
    /// head and then drips the body cannot keep the refresh in flight.
    package func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        let timeout = self.timeout
        return try await withThrowingTaskGroup(of: TokenHTTPResponse.self) { group in
            group.addTask {
                do {
                    return try await self.exchange(request)
                } catch {
                    throw TokenTransportError(error, url: request.url)
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw TokenTransportError(timeout: timeout)
            }
            defer { group.cancelAll() }
            return try await group.next()!
        }
    }

    private func exchange(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let (client, retired) = self.clients.current()
        if let retired { try? await retired.shutdown() }
        let response = try await client.execute(outgoing, timeout: TimeAmount(self.timeout))
        let body = try await response.body.collect(upTo: Self.maxBody)
        return TokenHTTPResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Array(body.readableBytesView)
        )
    }

    /// Closes the client's connections; call once, when the daemon stops.
    package func shutdown() async throws {
        try await self.clients.shutdown()
    }
}

/// A token request that did not get an HTTP answer: it failed below HTTP, said in words
/// ("connection refused", not NIO's "connection reset (error set): Connection refused (errno:
/// 111)"), or did not complete (connect, answer and body) within `auth.request_timeout`.
struct TokenTransportError: Error, CustomStringConvertible {
    /// Which of the two, for code to compare.
    enum Code: Equatable {
        case connection
        case timeout
    }

    let code: Code
    let description: String

    /// `error`, from a request to `url`, in words.
    init(_ error: any Error, url: String) {
        let target =
            url.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: true).dropFirst().first
            .map(String.init) ?? url
        self.code = .connection
        self.description = Self.describe(error, target: target)
    }

    /// No complete answer within `timeout`.
    init(timeout: Duration) {
        self.code = .timeout
        self.description = "no complete answer within auth.request_timeout (\(timeout.components.seconds)s)"
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
