import AsyncHTTPClient
import BearerdTokens
import Foundation
import NIOCore
import NIOPosix
import Synchronization
import Testing

@testable import BearerdCLI

/// The token endpoint's transport against servers that misbehave on purpose, on 127.0.0.1.
@Suite("Token transport deadlines")
struct TokenTransportTests {
    /// The head comes at once, then the body one byte at a time: before the total deadline this
    /// kept the single refresh in flight for as long as the server liked.
    @Test func aDripFedBodyEndsAtTheTotalDeadline() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let server = try await ServerBootstrap(group: group)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(Dripper()) }
            }
            .bind(host: "127.0.0.1", port: 0).get()
        let transport = try HTTPClientTokenTransport(caFile: nil, timeout: .milliseconds(800))
        let started = ContinuousClock.now
        await #expect(throws: (any Error).self) {
            _ = try await transport.send(
                TokenHTTPRequest(url: "http://127.0.0.1:\(server.localAddress!.port!)/token")
            )
        }
        let elapsed = ContinuousClock.now - started
        // Without the total deadline it ends with the body, 100 s on; alone it takes 0.9 s, and
        // the bound leaves room for a machine running every suite at once.
        #expect(elapsed < .seconds(30), "took \(elapsed)")
        try await transport.shutdown()
        try await server.close()
        try await group.shutdownGracefully()
    }

    /// A request that failed on a pooled connection the server had closed, before anything was
    /// written, goes again at once on a fresh one; one that may have reached the server does not.
    @Test(arguments: [
        (ChannelError.ioOnClosedChannel as any Error, 2, true),
        (HTTPClientError.remoteConnectionClosed as any Error, 1, false),
        (HTTPClientError.readTimeout as any Error, 1, false),
    ])
    func onlyARequestThatNeverLeftIsSentAgain(failure: any Error, attempts: Int, succeeds: Bool) async throws {
        let made = Mutex(0)
        let result = try? await HTTPClientTokenTransport.againIfNeverSent {
            let count = made.withLock { made in
                made += 1
                return made
            }
            if count == 1 { throw failure }
            return "answered"
        }
        #expect(made.withLock { $0 } == attempts)
        #expect((result == "answered") == succeeds)
    }

    @Test func aRequestIsSentAtMostTwice() async throws {
        let made = Mutex(0)
        await #expect(throws: ChannelError.self) {
            try await HTTPClientTokenTransport.againIfNeverSent { () async throws -> Int in
                made.withLock { $0 += 1 }
                throw ChannelError.ioOnClosedChannel
            }
        }
        #expect(made.withLock { $0 } == 2)
    }

    /// A refused port fails at once, not after the whole request timeout: async-http-client
    /// retried the connect until the deadline (300 s here). Alone it takes about 0.1 s; the
    /// bound (a tenth of the deadline) leaves room for a loaded machine running every suite at
    /// once: in CI's run of 655b573 every test that started with it took 16.5 s, this one too.
    @Test func aRefusedPortFailsAtOnce() async throws {
        let (socket, port) = try Self.closedPort()
        defer { close(socket) }
        let transport = try HTTPClientTokenTransport(caFile: nil, timeout: .seconds(300))
        let started = ContinuousClock.now
        let error = await #expect(throws: (any Error).self) {
            _ = try await transport.send(TokenHTTPRequest(url: "http://127.0.0.1:\(port)/token"))
        }
        let elapsed = ContinuousClock.now - started
        #expect(elapsed < .seconds(30), "took \(elapsed)")
        // Said in words: NIO's own text was "connection reset (error set): Connection refused".
        #expect("\(error.map { "\($0)" } ?? "")" == "connection refused by 127.0.0.1:\(port): nothing listens there")
        // For code: a transport error, with NIO's own error as its cause.
        let engineError = error as? TokenEngineError
        #expect(engineError?.code == .transport)
        #expect(engineError?.underlying != nil && !(engineError?.underlying is TokenEngineError))
        try await transport.shutdown()
    }

    /// A port nobody listens on, held by a bound socket that never listens: connecting to it is
    /// refused, and no other test binding port 0 meanwhile can be given it (closing the socket
    /// at once left a window in which one was, and the connect then hung instead).
    static func closedPort() throws -> (socket: Int32, port: Int) {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw POSIXError(.EMFILE) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(socket, generic, length) == 0 && getsockname(socket, generic, &length) == 0
            }
        }
        guard bound else {
            close(socket)
            throw POSIXError(.EADDRINUSE)
        }
        return (socket, Int(UInt16(bigEndian: address.sin_port)))
    }
}

/// Answers the first request with a head promising 1000 bytes, then sends one every 100 ms.
private final class Dripper: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    var started = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !self.started else { return }
        self.started = true
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"
        context.writeAndFlush(self.wrapOutboundOut(ByteBuffer(string: head)), promise: nil)
        let loop = context.eventLoop
        let channel = context.channel
        loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { task in
            guard channel.isActive else { return task.cancel() }
            channel.writeAndFlush(ByteBuffer(string: " "), promise: nil)
        }
    }
}

/// A TLS failure with the token server is said in words, naming the key that fixes it, and
/// never with BoringSSL's text, which names files of the build (issue 50).
@Suite("Token transport: TLS failures in words")
struct TLSFailureWordsTests {
    static let observed =
        "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435581 error:1000007d:SSL routines:OPENSSL_internal:CERTIFICATE_VERIFY_FAILED at /work/main/.build/checkouts/swift-nio-ssl/Sources/CNIOBoringSSL/ssl/handshake.cc:320]))"

    @Test(
        arguments: [
            (observed, "not trusted (CERTIFICATE_VERIFY_FAILED): set auth.ca_file"),
            (
                "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268435703 error:100000f7:SSL routines:OPENSSL_internal:WRONG_VERSION_NUMBER at /x/tls_record.cc:231]))",
                "does not answer in TLS (WRONG_VERSION_NUMBER): is it a plain http port?"
            ),
            (
                "handshakeFailed(NIOSSL.BoringSSLError.sslError([Error: 268436496 error:10000410:SSL routines:OPENSSL_internal:SSLV3_ALERT_HANDSHAKE_FAILURE at /x/tls_record.cc:592]))",
                "refused the TLS handshake (SSLV3_ALERT_HANDSHAKE_FAILURE): it may want a client certificate (auth.tls_cert_file)"
            ),
            ("uncleanShutdown", "TLS with auth.example:443 failed"),
        ]
    )
    func saidInWordsWithoutTheLibrarysText(text: String, expected: String) {
        let words = TokenEngineError.describeTLS(text, target: "auth.example:443")
        #expect(words.contains(expected), "\(words)")
        #expect(!words.contains("/") && !words.contains("OPENSSL_internal") && !words.contains("BoringSSL"), "\(words)")
    }
}
