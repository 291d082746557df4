import BearerdSockets
import BearerdTokens
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Where a browser login starts and comes back (RFC 8252 §7.3): `bearerd login` listens on
/// 127.0.0.1 (and `[::1]` on the same port, when it can).
///
/// - `GET /start?k=KEY` sends the browser on to the authorization URL, once. The browser is
///   given this address rather than the authorization URL, whose `state` and PKCE challenge a
///   program's arguments would show every local user. A second opening ends the login
///   (``Event/openedTwice``): someone else on the host got there first.
/// - `GET /callback?…` with the login's `state` is the answer (``Event/arrival(_:)``), once; its
///   page waits for ``Arrival/show(_:)``. One with another state is refused and the wait goes on
///   (counted: ``refusedCount``), so that nobody who can reach the port can end a login, nor
///   crowd out the answer.
/// - A `Host` other than this listener's (DNS rebinding) is refused.
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

    /// How the login ends at the listener: each comes at most once.
    enum Event: Sendable {
        /// The redirect with the login's state.
        case arrival(Arrival)
        /// The start address was opened a second time.
        case openedTwice
    }

    let port: Int
    private let channels: [any Channel]
    private let events: AsyncStream<Event>
    private let gate: RedirectGate

    private init(port: Int, channels: [any Channel], events: AsyncStream<Event>, gate: RedirectGate) {
        self.port = port
        self.channels = channels
        self.events = events
        self.gate = gate
    }

    /// Listens on `port` (`auth.redirect_port`; 0 for any free one).
    static func listen(port: Int, group: any EventLoopGroup) async throws -> LoopbackRedirect {
        let (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        let gate = RedirectGate(continuation: continuation)
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                // Only the person's own processes (their browser) may talk to the listener: the
                // start address is in a program's arguments, which other local users can read.
                guard Self.isOwnPeer(channel) else {
                    return channel.close()
                }
                return channel.eventLoop.makeCompletedFuture {
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
        gate.listening(on: bound)
        var channels = [first]
        // A browser that resolves "localhost" to ::1 after a port forward still finds it.
        if let second = try? await bootstrap.bind(host: "::1", port: bound).get() { channels.append(second) }
        return LoopbackRedirect(port: bound, channels: channels, events: events, gate: gate)
    }

    var redirectURI: String { "http://127.0.0.1:\(self.port)/callback" }

    /// The users whose connections are served: this process's, the one `sudo` ran it for, and
    /// root (who can read the login in any case).
    static let ownUsers: Set<UInt32> = {
        var users: Set<UInt32> = [getuid(), 0]
        if let text = ProcessInfo.processInfo.environment["SUDO_UID"], let uid = UInt32(text) { users.insert(uid) }
        return users
    }()

    /// Whether the connection's other end is a socket on this host owned by one of ``ownUsers``
    /// (the kernel's socket table, as the proxy's callers are named).
    static func isOwnPeer(_ channel: any Channel) -> Bool {
        guard let remote = channel.remoteAddress, let local = channel.localAddress,
            let owner = SocketOwner.of(remote: remote, local: local)
        else { return false }
        return Self.ownUsers.contains(owner.uid)
    }

    /// The address the browser is given: it sends it on to the authorization URL, once.
    var startURL: String { "http://127.0.0.1:\(self.port)/start?k=\(self.gate.startKey)" }

    /// The login under way: its state, and where `/start` sends the browser.
    func expect(state: String, authorizationURL: String) {
        self.gate.expect(state: state, authorizationURL: authorizationURL)
    }

    /// What the listener sees, as it sees it; ends once closed.
    var seen: AsyncStream<Event> { self.events }

    /// How many redirects with another state (or none) were refused.
    var refusedCount: Int { self.gate.refusedCount }

    func close() async {
        for channel in self.channels { try? await channel.close() }
        self.gate.close()
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

/// The listener's state: what it expects, and what it has let through.
final class RedirectGate: Sendable {
    private struct State {
        var port = 0
        var state: String?
        var authorizationURL: String?
        var started = false
        var openedTwice = false
        var done = false
        var refused = 0
    }

    let continuation: AsyncStream<LoopbackRedirect.Event>.Continuation
    let startKey = RedirectGate.randomKey()
    private let current = Mutex(State())

    init(continuation: AsyncStream<LoopbackRedirect.Event>.Continuation) {
        self.continuation = continuation
    }

    func listening(on port: Int) { self.current.withLock { $0.port = port } }

    func expect(state: String, authorizationURL: String) {
        self.current.withLock {
            $0.state = state
            $0.authorizationURL = authorizationURL
        }
    }

    func close() {
        self.current.withLock { $0.done = true }
        self.continuation.finish()
    }

    /// Whether `host` (the request's `Host`) names this listener.
    func isOwnHost(_ host: String?) -> Bool {
        let port = self.current.withLock { $0.port }
        guard let host else { return false }
        return ["127.0.0.1:\(port)", "[::1]:\(port)", "localhost:\(port)"].contains(host.lowercased())
    }

    /// Where `/start` with `key` sends the browser: the authorization URL the first time; `nil`
    /// for a wrong key, before the login began, or (reported) a second time.
    func start(key: String?) -> (url: String?, again: Bool) {
        guard let key, PKCE.sameText(key, self.startKey) else { return (nil, false) }
        let (url, again, first) = self.current.withLock { state -> (String?, Bool, Bool) in
            guard let url = state.authorizationURL, !state.done else { return (nil, false, false) }
            guard state.started else {
                state.started = true
                return (url, false, false)
            }
            defer { state.openedTwice = true }
            return (nil, true, !state.openedTwice)
        }
        if first { self.continuation.yield(.openedTwice) }
        return (url, again)
    }

    var refusedCount: Int { self.current.withLock { $0.refused } }

    enum Admission {
        case admitted
        case wrongState
        case over
    }

    /// Lets the redirect with the login's state through, once.
    func admit(_ arrival: LoopbackRedirect.Arrival) -> Admission {
        let admission = self.current.withLock { state -> Admission in
            guard !state.done else { return .over }
            guard let expected = state.state, let given = arrival.parameters["state"],
                PKCE.sameText(given, expected)
            else {
                state.refused += 1
                return .wrongState
            }
            state.done = true
            return .admitted
        }
        switch admission {
        case .admitted:
            self.continuation.yield(.arrival(arrival))
        case .wrongState, .over:
            break
        }
        return admission
    }

    static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
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
        let query = target.firstIndex(of: "?").map { target[target.index(after: $0)...] } ?? ""
        guard self.gate.isOwnHost(head.headers["host"].first) else {
            Self.write(
                .badRequest,
                RedirectPage(title: "Refused", message: "This is bearerd's login listener."),
                context
            )
            return
        }
        guard head.method == .GET, let parameters = LoopbackRedirect.parameters(query: query) else {
            Self.write(
                .badRequest,
                RedirectPage(title: "Login failed", message: "The request could not be read. Close this tab."),
                context
            )
            return
        }
        switch path {
        case "/start":
            let (url, again) = self.gate.start(key: parameters["k"])
            if let url {
                Self.redirect(to: url, context)
            } else if again {
                Self.write(
                    .conflict,
                    RedirectPage(
                        title: "Login stopped",
                        message: "This login was opened twice, so it was stopped. Run bearerd login again."
                    ),
                    context
                )
            } else {
                Self.write(
                    .notFound,
                    RedirectPage(title: "Not found", message: "This is bearerd's login listener."),
                    context
                )
            }
        case "/callback":
            self.callback(parameters, context: context)
        default:
            Self.write(
                .notFound,
                RedirectPage(title: "Not found", message: "This is bearerd's login listener."),
                context
            )
        }
    }

    private func callback(_ parameters: [String: String], context: ChannelHandlerContext) {
        let page = context.eventLoop.makePromise(of: RedirectPage.self)
        let sent = context.eventLoop.makePromise(of: Void.self)
        switch self.gate.admit(LoopbackRedirect.Arrival(parameters: parameters, page: page, sent: sent)) {
        case .admitted:
            let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
            page.futureResult.whenComplete { result in
                let shown =
                    (try? result.get())
                    ?? RedirectPage(title: "Login failed", message: "bearerd stopped waiting. Close this tab.")
                Self.write(shown.worked ? .ok : .badRequest, shown, bound.value, sent: sent)
            }
        case .wrongState:
            page.fail(ChannelError.alreadyClosed)
            sent.succeed()
            Self.write(
                .badRequest,
                RedirectPage(
                    title: "Login refused",
                    message:
                        "This redirect is not for the login under way (its state differs). Nothing was stored. Close this tab."
                ),
                context
            )
        case .over:
            page.fail(ChannelError.alreadyClosed)
            sent.succeed()
            Self.write(
                .conflict,
                RedirectPage(title: "Already finished", message: "This login is already over. Close this tab."),
                context
            )
        }
    }

    private static func redirect(to url: String, _ context: ChannelHandlerContext) {
        var headers = HTTPHeaders()
        headers.add(name: "location", value: url)
        headers.add(name: "content-length", value: "0")
        headers.add(name: "cache-control", value: "no-store")
        headers.add(name: "referrer-policy", value: "no-referrer")
        headers.add(name: "connection", value: "close")
        let handler = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.write(
            NIOAny(HTTPServerResponsePart.head(.init(version: .http1_1, status: .found, headers: headers))),
            promise: nil
        )
        context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil))).whenComplete { _ in
            handler.value.close(promise: nil)
        }
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
