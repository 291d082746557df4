import NIOCore
import NIOHTTP1
import NIOPosix

/// A response as the test client received it.
package struct TestHTTPResponse: Sendable {
    /// The head.
    package var head: HTTPResponseHead
    /// The body, up to the first 1 MiB.
    package var body: ByteBuffer
    /// All body bytes received.
    package var bodyBytes: Int

    /// The status code.
    package var status: Int { Int(self.head.status.code) }
    /// The body as text.
    package var bodyText: String { String(buffer: self.body) }
}

/// A keep-alive HTTP/1.1 client connection for tests, over TCP or a unix socket.
package struct TestHTTPClient {
    /// Where to connect.
    package enum Target: Sendable {
        case tcp(port: Int)
        case unix(path: String)
    }

    private let inbound: InboundParts
    private let outbound: NIOAsyncChannelOutboundWriter<HTTPClientRequestPart>
    /// The `Host` sent when a request gives none: `127.0.0.1:PORT`, or `localhost` on a unix socket.
    package let host: String

    /// Opens a connection, runs `body` with it and closes it.
    package static func withConnection<Result: Sendable>(
        to target: Target,
        group: any EventLoopGroup,
        _ body: (TestHTTPClient) async throws -> Result
    ) async throws -> Result {
        let bootstrap = ClientBootstrap(group: group)
        let initializer:
            @Sendable (any Channel) -> EventLoopFuture<NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>> =
                { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHTTPClientHandlers()
                        return try NIOAsyncChannel(wrappingChannelSynchronously: channel)
                    }
                }
        let channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>
        let host: String
        switch target {
        case .tcp(let port):
            // An address, not a host: no resolver query may outlive the test's event loops.
            channel = try await bootstrap.connect(
                to: try SocketAddress(ipAddress: "127.0.0.1", port: port),
                channelInitializer: initializer
            )
            host = "127.0.0.1:\(port)"
        case .unix(let path):
            channel = try await bootstrap.connect(to: try .unixSocket(path), channelInitializer: initializer)
            host = "localhost"
        }
        return try await channel.executeThenClose { inbound, outbound in
            try await body(
                TestHTTPClient(inbound: InboundParts(inbound.makeAsyncIterator()), outbound: outbound, host: host)
            )
        }
    }

    /// Sends a request with a body given as chunks (each written with backpressure) and reads the
    /// response. A `Host` naming the server is added unless `headers` has one.
    package func send(
        _ method: HTTPMethod = .GET,
        _ uri: String,
        headers: HTTPHeaders = [:],
        body: some AsyncSequence<ByteBuffer, Never> & Sendable = EmptyBody(),
        onBodyPart: (ByteBuffer) async throws -> Void = { _ in }
    ) async throws -> TestHTTPResponse {
        var headers = headers
        if !headers.contains(name: "host") { headers.add(name: "host", value: self.host) }
        try await self.outbound.write(
            .head(HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers))
        )
        for await chunk in body { try await self.outbound.write(.body(.byteBuffer(chunk))) }
        do {
            try await self.outbound.write(.end(nil))
        } catch ChannelError.ioOnClosedChannel {
            // A server may answer a bodiless request at its head and close (after a reload,
            // `Connection: close`) before this empty end is written: its answer is read below.
        }
        return try await self.readResponse(onBodyPart: onBodyPart)
    }

    /// Sends a request whose whole body is `text`.
    package func send(
        _ method: HTTPMethod,
        _ uri: String,
        headers: HTTPHeaders = [:],
        text: String
    ) async throws -> TestHTTPResponse {
        var headers = headers
        headers.replaceOrAdd(name: "content-length", value: String(text.utf8.count))
        return try await self.send(method, uri, headers: headers, body: OneChunk(ByteBuffer(string: text)))
    }

    /// Reads one response.
    package func readResponse(onBodyPart: (ByteBuffer) async throws -> Void = { _ in }) async throws -> TestHTTPResponse
    {
        var head: HTTPResponseHead?
        var body = ByteBuffer()
        var bytes = 0
        while let part = try await self.inbound.next() {
            switch part {
            case .head(let received): head = received
            case .body(var buffer):
                bytes += buffer.readableBytes
                try await onBodyPart(buffer)
                if body.readableBytes < 1 << 20 { body.writeBuffer(&buffer) }
            case .end:
                guard let head else { throw TestClientError("response ended before its head") }
                return TestHTTPResponse(head: head, body: body, bodyBytes: bytes)
            }
        }
        throw TestClientError("connection closed before a complete response")
    }
}

/// An error of the test clients.
package struct TestClientError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}

/// No body.
package struct EmptyBody: AsyncSequence, Sendable {
    package init() {}
    package struct AsyncIterator: AsyncIteratorProtocol {
        package mutating func next() async -> ByteBuffer? { nil }
    }
    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator() }
}

/// A body of one chunk.
package struct OneChunk: AsyncSequence, Sendable {
    let buffer: ByteBuffer
    package init(_ buffer: ByteBuffer) { self.buffer = buffer }
    package struct AsyncIterator: AsyncIteratorProtocol {
        var buffer: ByteBuffer?
        package mutating func next() async -> ByteBuffer? {
            defer { self.buffer = nil }
            return self.buffer
        }
    }
    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: self.buffer) }
}

/// `count` bytes in 64 KiB chunks, made on the fly.
package struct GeneratedBody: AsyncSequence, Sendable {
    let count: Int
    package init(count: Int) { self.count = count }
    package struct AsyncIterator: AsyncIteratorProtocol {
        var left: Int
        static let chunk = ByteBuffer(repeating: UInt8(ascii: "u"), count: 64 * 1024)
        package mutating func next() async -> ByteBuffer? {
            guard self.left > 0 else { return nil }
            let size = Swift.min(self.left, Self.chunk.readableBytes)
            self.left -= size
            return Self.chunk.getSlice(at: 0, length: size)
        }
    }
    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(left: self.count) }
}

/// Holds the inbound iterator so the client struct can read across calls.
final class InboundParts {
    private var iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator

    init(_ iterator: NIOAsyncChannelInboundStream<HTTPClientResponsePart>.AsyncIterator) {
        self.iterator = iterator
    }

    func next() async throws -> HTTPClientResponsePart? {
        try await self.iterator.next()
    }
}
