import BearerdAuth
import BearerdSockets
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// Checks a client's request head before anything is sent upstream.
///
/// Only origin-form targets are accepted, so a request can never steer bearerd (and the token) to
/// another host: absolute-form and authority-form targets, `CONNECT`, duplicate or malformed
/// `Host` headers are refused, and the path lists see the one canonical form of the target that
/// is also the one forwarded (``CanonicalTarget``), so it never leaves the upstream's base path.
enum RequestPolicy {
    /// What to do with a request.
    enum Verdict {
        /// Forward it, to this canonical target.
        case forward(ForwardTarget)
        /// Answer it with this refusal; nothing goes upstream.
        case answer(ProxyFailure)
    }

    /// The canonical target to check and forward, or the failure to answer with.
    /// `viaTCP`: the caller came in on a TCP listener (the shared key applies); unix-socket
    /// callers are already limited by the socket's mode. `local`: the address the client
    /// connected to, for the rebinding guard.
    ///
    /// The settings come in their shared box: a `ProxySettings` passed by value is copied whole
    /// at the call (a retain and a release of each of its references, some 57 per call, counted
    /// with `scripts/bench-count --callers`), even when borrowed.
    static func check(
        _ head: RequestHead,
        settings: ProxySettings.Shared,
        viaTCP: Bool = true,
        local: SocketAddress? = nil
    ) -> Verdict {
        if head.method == .CONNECT { return .answer(Self.connectRefused) }
        // TRACE echoes the request, and with it the token bearerd adds (nginx refuses it too).
        // TRACK, and every other method llhttp does not know, the parser refuses already.
        if head.method == .TRACE { return .answer(.methodNotAllowed("TRACE")) }
        if head.target.count > settings.value.proxy.limits.maxRequestLine {
            return .answer(.targetTooLong(limit: settings.value.proxy.limits.maxRequestLine))
        }
        guard head.bytes.getInteger(at: head.target.lowerBound, as: UInt8.self) == UInt8(ascii: "/") else {
            return .answer(Self.notOriginForm)
        }
        let target: ForwardTarget
        switch ForwardTarget.of(head, allowPathParams: settings.value.proxy.allowPathParams) {
        case .parsed(let canonical): target = canonical
        case .refused(let reason): return .answer(.badRequest(reason))
        }
        if let failure = Self.checkHeaders(head, target: target, settings: settings, viaTCP: viaTCP, local: local) {
            return .answer(failure)
        }
        return .forward(target)
    }

    static let connectRefused = ProxyFailure.badRequest(
        "CONNECT is refused: bearerd forwards requests to its one configured upstream only"
    )

    static let notOriginForm = ProxyFailure.badRequest(
        "only origin-form request targets like /path?query are accepted; absolute-form (http://host/…), authority-form and * targets are refused"
    )

    private static func checkHeaders(
        _ head: RequestHead,
        target: ForwardTarget,
        settings: ProxySettings.Shared,
        viaTCP: Bool,
        local: SocketAddress?
    ) -> ProxyFailure? {
        // The parser already holds the framing, the field count and size to their limits. One
        // pass over the fields collects what the checks below need; only the values checked
        // become strings.
        var hosts = 0
        var hostRange: Range<Int>?
        var expectRange: Range<Int>?
        var authorization = false
        var origin: Range<Int>?
        var fetchSite: Range<Int>?
        let key = viaTCP ? settings.value.clientKey : nil
        var keyMatched = false
        head.bytes.withUnsafeReadableBytes { raw in
            for field in head.fields {
                let name = field.name
                if let key, key.isHeader(raw, name) { keyMatched = key.matches(raw, field.value) }
                switch name.count {
                case 4 where HeaderName.equals(raw, name, "host"):
                    hosts += 1
                    hostRange = field.value
                case 6 where HeaderName.equals(raw, name, "expect"):
                    expectRange = field.value
                case 6 where HeaderName.equals(raw, name, "origin"):
                    origin = field.value
                case 14 where HeaderName.equals(raw, name, "sec-fetch-site"):
                    fetchSite = field.value
                case 13 where HeaderName.equals(raw, name, "authorization"):
                    authorization = true
                default:
                    break
                }
            }
        }
        func string(_ range: Range<Int>?) -> String? {
            range.flatMap { head.bytes.getString(at: $0.lowerBound, length: $0.count) }
        }
        let host = string(hostRange)
        let expect = string(expectRange)
        if let key, !keyMatched {
            return .forbidden("this listener needs the shared key in the \(key.header) header (proxy.client_key_file)")
        }
        if settings.value.proxy.browserGuard,
            let failure = Self.checkBrowser(origin: string(origin), fetchSite: string(fetchSite), settings)
        {
            return failure
        }
        if let failure = Self.checkHost(count: hosts, value: host, version: head.version) { return failure }
        if let hostGuard = settings.value.hostGuard, let host, let local, !hostGuard.permits(host, local: local) {
            let shown = host.utf8.count <= 100 ? host : "…"
            return .forbidden(
                "Host: \(shown) is not a name of this listener, so a web page may have sent it (DNS rebinding); use 127.0.0.1:PORT or localhost:PORT, or list the name in proxy.allowed_hosts"
            )
        }
        if !settings.value.access.isEmpty,
            let refusal = settings.value.access.refusal(method: head.method, path: target.path(of: head))
        {
            return .forbidden(refusal)
        }
        if let expect, !HeaderName.equals(expect, "100-continue") {
            return .expectationFailed(expect)
        }
        if let limit = settings.value.proxy.limits.maxRequestBody, let length = head.contentLength, length > limit {
            return .bodyTooLarge(limit: limit)
        }
        if settings.value.proxy.clientAuthorization == .reject && authorization {
            return .badRequest(
                "requests must not carry an Authorization header: bearerd adds the token (proxy.client_authorization: reject)"
            )
        }
        // A WebSocket handshake without a key to check the upstream's 101 against never goes out.
        if head.isUpgrade,
            case .refused(let reason) = UpgradeOffer.decide(head, allowed: settings.value.proxy.allowUpgrades)
        {
            return .badRequest(reason)
        }
        return nil
    }

    /// A web page open in a browser on this machine can send requests to 127.0.0.1; it must not
    /// ride the user's token. Browsers mark their requests: `Origin` on cross-origin requests
    /// (CORS preflights included) and on POSTs, `Sec-Fetch-Site` on all of them.
    private static func checkBrowser(
        origin: String?,
        fetchSite: String?,
        _ settings: ProxySettings.Shared
    ) -> ProxyFailure? {
        let allowed = origin.map { settings.value.proxy.allowedOrigins.contains($0.lowercased()) } ?? false
        if let origin, !allowed {
            let shown = origin.utf8.count <= 100 && origin.utf8.allSatisfy { $0 >= 0x20 && $0 < 0x7F } ? origin : "…"
            return .forbidden(
                "a web page (Origin: \(shown)) may not use bearerd's token; list its origin in proxy.allowed_origins if it should"
            )
        }
        if let fetchSite, !allowed,
            HeaderName.equals(fetchSite, "cross-site") || HeaderName.equals(fetchSite, "same-site")
        {
            return .forbidden(
                "a request a web page sent (Sec-Fetch-Site: \(fetchSite.prefix(20))) may not use bearerd's token; see proxy.browser_guard"
            )
        }
        return nil
    }

    private static func checkHost(count: Int, value: String?, version: WireVersion) -> ProxyFailure? {
        if count > 1 { return .badRequest("more than one Host header") }
        guard let host = value else {
            return version.minor >= 1 ? .badRequest("an HTTP/1.1 request needs a Host header") : nil
        }
        let valid =
            !host.isEmpty
            && host.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    return true
                case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"),
                    UInt8(ascii: "["), UInt8(ascii: "]"), UInt8(ascii: "%"):
                    return true
                default:
                    return false
                }
            }
        return valid ? nil : .badRequest("the Host header is not a valid host[:port]")
    }
}
