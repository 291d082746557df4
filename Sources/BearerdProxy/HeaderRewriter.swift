import BearerdAuth
import BearerdConfig
import Logging
import NIOCore
import NIOHTTP1

/// Turns a client's request head into the one sent upstream, and an upstream response head into
/// the one sent to the client.
enum HeaderRewriter {
    /// The upstream request head.
    ///
    /// Hop-by-hop headers and every header named by `Connection` are removed; `Host` becomes the
    /// upstream's; the token (when given) is the only `Authorization`; `X-Forwarded-*` are set
    /// from what bearerd saw, replacing what the client claimed. Framing is set from the client's
    /// original message, never from what remains after removal, so a hostile `Connection:
    /// content-length` cannot desynchronise the upstream connection.
    static func upstreamRequest(
        _ head: HTTPRequestHead,
        token: BearerToken?,
        peer: String?,
        settings: ProxySettings
    ) -> HTTPRequestHead {
        let client = head.headers
        let options = HeaderName.extraConnectionOptions(client)
        let keepClientAuthorization = token == nil
        var headers = HTTPHeaders()
        headers.reserveCapacity(client.count + 5)
        headers.add(name: "host", value: settings.target.hostHeader)
        for (name, value) in client {
            if HeaderName.isHopByHop(name) || HeaderName.equals(name, "host")
                || HeaderName.equals(name, "content-length")
                || HeaderName.equals(name, "expect")
            {
                continue
            }
            if !keepClientAuthorization && HeaderName.equals(name, "authorization") { continue }
            if settings.forwardedHeaders && Self.isForwardedHeader(name) { continue }
            if !options.isEmpty && HeaderName.isListed(name, in: options) { continue }
            headers.add(name: name, value: value)
        }
        if let length = client.first(name: "content-length") {
            headers.add(name: "content-length", value: length)
        } else if client.contains(name: "transfer-encoding") {
            headers.add(name: "transfer-encoding", value: "chunked")
        } else if head.method == .POST || head.method == .PUT || head.method == .PATCH {
            headers.add(name: "content-length", value: "0")
        }
        if let token { headers.add(name: "authorization", value: token.authorizationHeaderValue) }
        if settings.forwardedHeaders {
            if let peer { headers.add(name: "x-forwarded-for", value: peer) }
            headers.add(name: "x-forwarded-proto", value: "http")
            if let host = client.first(name: "host") { headers.add(name: "x-forwarded-host", value: host) }
        }
        return HTTPRequestHead(
            version: .http1_1,
            method: head.method,
            uri: settings.target.join(head.uri),
            headers: headers
        )
    }

    /// The response head for the client: hop-by-hop headers removed, the client's HTTP version,
    /// `Connection` saying whether bearerd keeps the client connection open, and the framing the
    /// body will be sent with. The response encoder trusts this framing (it does not re-check
    /// it): a body without Content-Length goes chunked to an HTTP/1.1 client, and to an HTTP/1.0
    /// client it ends with the connection (the caller sets `close` for that).
    static func clientResponse(_ head: HTTPResponseHead, for request: HTTPRequestHead, close: Bool) -> HTTPResponseHead
    {
        let upstream = head.headers
        let options = HeaderName.extraConnectionOptions(upstream)
        let mayHaveBody = head.status.mayHaveResponseBody
        var headers = HTTPHeaders()
        headers.reserveCapacity(upstream.count + 1)
        var hasLength = false
        for (name, value) in upstream {
            if HeaderName.isHopByHop(name) { continue }
            if !options.isEmpty && HeaderName.isListed(name, in: options) { continue }
            if name.utf8.count == 14 && HeaderName.equals(name, "content-length") {
                // A 1xx or 204 carries no body and no length (RFC 9110 §8.6).
                if head.status.code < 200 || head.status == .noContent { continue }
                hasLength = true
            }
            headers.add(name: name, value: value)
        }
        if mayHaveBody && !hasLength && request.method != .HEAD && request.version.minor >= 1 {
            headers.add(name: "transfer-encoding", value: "chunked")
        }
        if close {
            headers.add(name: "connection", value: "close")
        } else if request.version.minor == 0 {
            headers.add(name: "connection", value: "keep-alive")
        }
        return HTTPResponseHead(version: request.version, status: head.status, headers: headers)
    }

    private static func isForwardedHeader(_ name: String) -> Bool {
        switch name.utf8.count {
        case 15: HeaderName.equals(name, "x-forwarded-for")
        case 16: HeaderName.equals(name, "x-forwarded-host")
        case 17: HeaderName.equals(name, "x-forwarded-proto")
        default: false
        }
    }
}
