import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// A request as the test upstream received it.
package struct RecordedRequest: Sendable {
    /// The head, exactly as it arrived.
    package var head: HTTPRequestHead
    /// The first 64 KiB of the body.
    package var body: ByteBuffer
    /// All body bytes received.
    package var bodyBytes: Int

    /// The body as text.
    package var bodyText: String { String(buffer: self.body) }
}

/// What the test upstream answers.
package indirect enum TestResponse: Sendable {
    /// A complete response.
    case respond(status: HTTPResponseStatus, headers: [(String, String)], body: String)
    /// `bytes` bytes of `x` with Content-Length, written only as fast as the connection takes them.
    case stream(bytes: Int)
    /// Waits, then answers.
    case delayed(TimeAmount, TestResponse)
    /// Closes the connection without answering.
    case close

    /// A 200 with a text body.
    package static func ok(_ body: String = "ok", headers: [(String, String)] = []) -> TestResponse {
        .respond(status: .ok, headers: headers, body: body)
    }
}

/// An in-process HTTP/1.1 upstream on 127.0.0.1:0 that records what reaches it.
package final class TestUpstream: Sendable {
    /// The bound port.
    package let port: Int
    private let channel: any Channel
    let state: Mutex<State>

    struct State {
        var requests: [RecordedRequest] = []
        var connections = 0
        var streamedBytes = 0
    }

    /// Every request received so far.
    package var requests: [RecordedRequest] { self.state.withLock { $0.requests } }
    /// Connections accepted so far.
    package var connectionCount: Int { self.state.withLock { $0.connections } }
    /// Body bytes written by `.stream` responses so far.
    package var streamedBytes: Int { self.state.withLock { $0.streamedBytes } }

    private init(port: Int, channel: any Channel) {
        self.port = port
        self.channel = channel
        self.state = Mutex(State())
    }

    /// Starts an upstream that answers each request with `responder`.
    package static func start(
        group: any EventLoopGroup,
        tls: NIOSSLContext? = nil,
        responder: @escaping @Sendable (RecordedRequest) -> TestResponse = { _ in .ok() }
    ) async throws -> TestUpstream {
        let box = StateBox()
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                box.upstream?.state.withLock { $0.connections += 1 }
                return channel.eventLoop.makeCompletedFuture {
                    if let tls { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls)) }
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(TestUpstreamHandler(box: box, responder: responder))
                }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let upstream = TestUpstream(port: channel.localAddress!.port!, channel: channel)
        box.upstream = upstream
        return upstream
    }

    /// Stops accepting; open connections close with the event loop group.
    package func stop() async {
        try? await self.channel.close()
    }
}

/// Lets the child handlers reach the upstream object created after bind.
final class StateBox: Sendable {
    private let value = Mutex<TestUpstream?>(nil)
    var upstream: TestUpstream? {
        get { self.value.withLock { $0 } }
        set { self.value.withLock { $0 = newValue } }
    }
}

/// How a ``TestUpstream`` answers, as a value (so fixtures can take it next to a trailing closure).
package struct Responder: Sendable {
    let respond: @Sendable (RecordedRequest) -> TestResponse

    /// Answers each request with `respond`.
    package init(_ respond: @escaping @Sendable (RecordedRequest) -> TestResponse) {
        self.respond = respond
    }
}
