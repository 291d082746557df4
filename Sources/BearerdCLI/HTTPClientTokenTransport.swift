import AsyncHTTPClient
import BearerdTokens
import NIOCore
import NIOHTTP1
import NIOSSL

/// Talks to token endpoints with async-http-client: its own client, no redirects followed (a
/// redirect would carry credentials somewhere unplanned), no decompression, bounded answers.
public struct HTTPClientTokenTransport: TokenTransport {
    /// Answers larger than this are an error; token responses are a few KiB.
    static let maxBody = 1 << 20

    let client: HTTPClient
    let timeout: TimeAmount

    /// - Parameters:
    ///   - caFile: PEM bundle to trust instead of the system's roots (`auth.ca_file`).
    ///   - timeout: for each whole request (`auth.request_timeout`).
    public init(caFile: String?, timeout: Duration) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .file(caFile) }
        let configuration = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: .init(connect: .seconds(10)),
            decompression: .disabled
        )
        self.client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        let (seconds, attoseconds) = timeout.components
        self.timeout = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    public func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url)
        outgoing.method = HTTPMethod(rawValue: request.method)
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if let body = request.body { outgoing.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await self.client.execute(outgoing, timeout: self.timeout)
        let body = try await response.body.collect(upTo: Self.maxBody)
        return TokenHTTPResponse(
            status: Int(response.status.code),
            headers: response.headers.map { ($0.name, $0.value) },
            body: Array(body.readableBytesView)
        )
    }

    /// Closes the client's connections; call once, when the daemon stops.
    public func shutdown() async throws {
        try await self.client.shutdown()
    }
}
