import AsyncHTTPClient
import BearerdAuth
import BearerdConfig
import BearerdFiles
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
    /// - Throws: ``ProxyError`` when the certificate or its key cannot be used.
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
        return try await withDeadline(timeout) {
            do {
                return try await self.sendAgainIfNeverSent(request)
            } catch {
                throw TokenEngineError.transport(error, url: request.url)
            }
        } expired: {
            throw TokenEngineError.transport(timeout: timeout)
        }
    }

    private func sendAgainIfNeverSent(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        try await Self.againIfNeverSent { try await self.sendOnce(request) }
    }

    /// Runs `attempt`, and once more if it failed before the request was handed to a connection:
    /// async-http-client fails a request given to a pooled connection that the server has closed
    /// meanwhile with `ChannelError.ioOnClosedChannel`, before a byte is written. Any other failure
    /// may have reached the server, and a rotated refresh token is never sent blindly twice: it
    /// goes to the engine as it is (in flight, retried by the backoff).
    static func againIfNeverSent<T>(_ attempt: () async throws -> T) async throws -> T {
        do {
            return try await attempt()
        } catch ChannelError.ioOnClosedChannel {
            return try await attempt()
        }
    }

    private func sendOnce(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
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
