import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// Where a browser login comes back (RFC 8252 §7.3): `bearerd login` listens on 127.0.0.1 (and
/// `[::1]` on the same port, when it can) for `GET /callback?…`. The first such request is the
/// answer: its parameters go to ``next()``, and the page the browser shows waits for
/// ``finish(_:)``, which says whether the login worked. Any later one is told the login is over.
final class LoopbackRedirect: Sendable {
    /// A redirect's parameters, and the page the browser waits for.
    struct Arrival: Sendable {
        var parameters: [String: String]
        var page: EventLoopPromise<RedirectPage>
        /// Completed once the page is written (or could not be).
        var sent: EventLoopPromise<Void>

        /// Shows `page` in the browser and waits until it is written.
        func show(_ page: RedirectPage) async {
            self.page.succeed(page)
            try? await self.sent.futureResult.get()
        }
    }

    let port: Int
    private let channels: [any Channel]
    private let arrivals: AsyncStream<Arrival>

    private init(port: Int, channels: [any Channel], arrivals: AsyncStream<Arrival>) {
        self.port = port
        self.channels = channels
        self.arrivals = arrivals
    }

    /// Listens on `port` (`auth.redirect_port`; 0 for any free one).
    static func listen(port: Int, group: any EventLoopGroup) async throws -> LoopbackRedirect {
        let (arrivals, continuation) = AsyncStream<Arrival>.makeStream(bufferingPolicy: .bufferingOldest(1))
        let gate = RedirectGate(continuation: continuation)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(RedirectHandler(gate: gate))
                }
            }
        let first: any Channel
        do {
            first = try await bootstrap.bind(host: "127.0.0.1", port: port).get()
        } catch {
            let which = port == 0 ? "a free port" : "port \(port) (auth.redirect_port)"
            throw CommandError(
                "cannot listen on 127.0.0.1 at \(which) for the browser's redirect: \(error)\(port == 0 ? "" : "; free the port or change auth.redirect_port")"
            )
        }
        let bound = first.localAddress?.port ?? port
        var channels = [first]
        // A browser that resolves "localhost" to ::1 after a port forward still finds it.
        if let second = try? await bootstrap.bind(host: "::1", port: bound).get() { channels.append(second) }
        return LoopbackRedirect(port: bound, channels: channels, arrivals: arrivals)
    }

    var redirectURI: String { "http://127.0.0.1:\(self.port)/callback" }

    /// The first redirect; `nil` once closed.
    func next() async -> Arrival? {
        var iterator = self.arrivals.makeAsyncIterator()
        return await iterator.next()
    }

    func close() async {
        for channel in self.channels { try? await channel.close() }
    }

    /// A query's parameters (`+` is a space); `nil` when one is repeated or cannot be decoded,
    /// which a redirect from a server never does.
    static func parameters(query: Substring) -> [String: String]? {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = String(parts[0]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding,
                let value = String(parts.count > 1 ? parts[1] : "").replacingOccurrences(of: "+", with: " ")
                    .removingPercentEncoding,
                result[name] == nil
            else { return nil }
            result[name] = value
        }
        return result
    }
}

/// Lets the first redirect through, once.
private final class RedirectGate: Sendable {
    let continuation: AsyncStream<LoopbackRedirect.Arrival>.Continuation
    private let used = Mutex(false)

    init(continuation: AsyncStream<LoopbackRedirect.Arrival>.Continuation) {
        self.continuation = continuation
    }

    /// Whether this is the first; the stream ends with it.
    func admit(_ arrival: LoopbackRedirect.Arrival) -> Bool {
        let first = self.used.withLock { used in
            defer { used = true }
            return !used
        }
        guard first else { return false }
        self.continuation.yield(arrival)
        self.continuation.finish()
        return true
    }
}

private final class RedirectHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let gate: RedirectGate

    init(gate: RedirectGate) {
        self.gate = gate
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = self.unwrapInboundIn(data) else { return }
        let target = head.uri
        let path = target.split(separator: "?", maxSplits: 1).first.map(String.init) ?? target
        guard head.method == .GET, path == "/callback" else {
            Self.write(
                .notFound,
                RedirectPage(title: "Not found", message: "This is bearerd's login listener."),
                context
            )
            return
        }
        let query = target.firstIndex(of: "?").map { target[target.index(after: $0)...] } ?? ""
        guard let parameters = LoopbackRedirect.parameters(query: query) else {
            Self.write(
                .badRequest,
                RedirectPage(title: "Login failed", message: "The redirect could not be read. Close this tab."),
                context
            )
            return
        }
        let page = context.eventLoop.makePromise(of: RedirectPage.self)
        let sent = context.eventLoop.makePromise(of: Void.self)
        guard self.gate.admit(LoopbackRedirect.Arrival(parameters: parameters, page: page, sent: sent)) else {
            page.fail(ChannelError.alreadyClosed)
            sent.succeed()
            Self.write(
                .conflict,
                RedirectPage(title: "Already finished", message: "This login is already over. Close this tab."),
                context
            )
            return
        }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        page.futureResult.whenComplete { result in
            let shown =
                (try? result.get())
                ?? RedirectPage(title: "Login failed", message: "bearerd stopped waiting. Close this tab.")
            Self.write(shown.worked ? .ok : .badRequest, shown, bound.value, sent: sent)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        context.fireChannelInactive()
    }

    private static func write(
        _ status: HTTPResponseStatus,
        _ page: RedirectPage,
        _ context: ChannelHandlerContext,
        sent: EventLoopPromise<Void>? = nil
    ) {
        let body = context.channel.allocator.buffer(string: page.html)
        var headers = HTTPHeaders()
        headers.add(name: "content-type", value: "text/html; charset=utf-8")
        headers.add(name: "content-length", value: String(body.readableBytes))
        headers.add(name: "cache-control", value: "no-store")
        headers.add(name: "referrer-policy", value: "no-referrer")
        headers.add(name: "content-security-policy", value: "default-src 'none'")
        headers.add(name: "connection", value: "close")
        let handler = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.write(
            NIOAny(HTTPServerResponsePart.head(.init(version: .http1_1, status: status, headers: headers))),
            promise: nil
        )
        context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(body))), promise: nil)
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in
            handler.value.close(promise: nil)
            sent?.succeed()
        }
    }
}

/// The page the browser shows when it comes back.
struct RedirectPage: Sendable {
    var title: String
    var message: String
    var worked = false

    var html: String {
        """
        <!doctype html>
        <html><head><meta charset="utf-8"><title>bearerd: \(Self.escaped(self.title))</title></head>
        <body style="font-family: sans-serif; margin: 3em">
        <h1>\(Self.escaped(self.title))</h1>
        <p>\(Self.escaped(self.message))</p>
        </body></html>

        """
    }

    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
