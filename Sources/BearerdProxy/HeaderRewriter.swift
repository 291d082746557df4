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
        // Built as an array and wrapped once: HTTPHeaders.add re-checks every name, and these names
        // were all checked by the parser already (or are our own constants).
        var headers: [(String, String)] = []
        headers.reserveCapacity(client.count + 5)
        headers.append(("host", settings.target.hostHeader))
        var length: String?
        var chunked = false
        var clientHost: String?
        for (name, value) in client {
            switch name.utf8.count {
            case 4 where HeaderName.equals(name, "host"):
                clientHost = value
                continue
            case 6 where HeaderName.equals(name, "expect"):
                continue
            case 14 where HeaderName.equals(name, "content-length"):
                length = value
                continue
            case 17 where HeaderName.equals(name, "transfer-encoding"):
                chunked = true
                continue
            default:
                break
            }
            if HeaderName.isHopByHop(name) { continue }
            if !keepClientAuthorization && HeaderName.equals(name, "authorization") { continue }
            if settings.forwardedHeaders && Self.isForwardedHeader(name) { continue }
            if !options.isEmpty && HeaderName.isListed(name, in: options) { continue }
            headers.append((name, value))
        }
        if let length {
            headers.append(("content-length", length))
        } else if chunked {
            headers.append(("transfer-encoding", "chunked"))
        } else if head.method == .POST || head.method == .PUT || head.method == .PATCH {
            headers.append(("content-length", "0"))
        }
        if let token { headers.append(("authorization", token.authorizationHeaderValue)) }
        if settings.forwardedHeaders {
            if let peer { headers.append(("x-forwarded-for", peer)) }
            headers.append(("x-forwarded-proto", "http"))
            if let clientHost { headers.append(("x-forwarded-host", clientHost)) }
        }
        return HTTPRequestHead(
            version: .http1_1,
            method: head.method,
            uri: settings.target.join(head.uri),
            headers: HTTPHeaders(headers)
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
        var headers: [(String, String)] = []
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
            headers.append((name, value))
        }
        if mayHaveBody && !hasLength && request.method != .HEAD && request.version.minor >= 1 {
            headers.append(("transfer-encoding", "chunked"))
        }
        if close {
            headers.append(("connection", "close"))
        } else if request.version.minor == 0 {
            headers.append(("connection", "keep-alive"))
        }
        return HTTPResponseHead(version: request.version, status: head.status, headers: HTTPHeaders(headers))
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
