import BearerdAuth
import BearerdWire
import Logging
import NIOCore
import NIOHTTP1

/// How a request body goes upstream.
enum RequestFraming {
    case none
    case length
    /// Re-chunked by bearerd: NIO's decoder hands over the chunks' data only.
    case chunked
}

/// How a response body goes to the client.
enum ResponseFraming {
    /// No body (a response to HEAD, 204, 304).
    case none
    /// Content-Length: the bytes as they come.
    case length
    case chunked
    /// The body ends when the connection closes (HTTP/1.0 clients only).
    case close
}

/// Turns a client's request head into the one sent upstream, and an upstream response head into
/// the one sent to the client, written straight into the buffer that goes out.
enum HeaderRewriter {
    /// The upstream request head, for the canonical `target` the checks saw.
    ///
    /// Hop-by-hop headers and every header named by `Connection` are removed; `Host` becomes the
    /// upstream's; the token (when given) is the only `Authorization`; `X-Forwarded-*` are set
    /// from what bearerd saw, replacing what the client claimed, and so are the fields of
    /// `proxy.add_headers`. Framing is set from the client's
    /// original message, never from what remains after removal, so a hostile `Connection:
    /// content-length` cannot desynchronise the upstream connection.
    static func upstreamRequest(
        _ head: RequestHead,
        target: ForwardTarget,
        token: BearerToken?,
        proof: String? = nil,
        peer: String?,
        settings: ProxySettings.Shared,
        trace: [(String, String)]? = nil,
        into buffer: inout ByteBuffer
    ) -> (framing: RequestFraming, upgrade: UpgradeOffer.Decision) {
        let keepClientAuthorization = token == nil
        // With auth.dpop, bearerd's proof is the only one: a client's would not match the token.
        let provesPossession = settings.value.dpop != nil
        let dropClientProof = token != nil && provesPossession
        buffer.writeString(head.method.rawValue)
        buffer.writeInteger(UInt8(ascii: " "))
        buffer.writeString(settings.value.upstream.target.basePath)
        target.write(of: head, into: &buffer)
        buffer.writeStaticString(" HTTP/1.1\r\n")
        WireFormat.writeField("host", settings.value.upstream.target.hostHeader, into: &buffer)
        var clientHost: Range<Int>?
        // What the loop below asks of the settings, taken out once rather than per field.
        let clientKey = settings.value.clientKey
        let dropForwarded = settings.value.proxy.forwardedHeaders
        let dropOverrides = !settings.value.proxy.passOverrideHeaders
        let addHeaders = settings.value.proxy.addHeaders
        head.bytes.withUnsafeReadableBytes { raw in
            for field in head.fields {
                let name = field.name
                switch name.count {
                case 4 where HeaderName.equals(raw, name, "host"):
                    clientHost = field.value
                    continue
                case 6 where HeaderName.equals(raw, name, "expect"):
                    continue
                case 14 where HeaderName.equals(raw, name, "content-length"):
                    continue
                case 14 where HeaderName.equals(raw, name, "http2-settings"):
                    // Only an upgrade to h2c uses it (RFC 7540 §3.2), and that is never offered.
                    continue
                default:
                    break
                }
                if HeaderName.isHopByHop(raw, name) { continue }
                if !keepClientAuthorization && HeaderName.equals(raw, name, "authorization") { continue }
                if dropClientProof && HeaderName.equals(raw, name, "dpop") { continue }
                // With tracing, this exchange's span is the upstream's parent: sent below.
                if trace != nil
                    && (HeaderName.equals(raw, name, "traceparent") || HeaderName.equals(raw, name, "tracestate"))
                {
                    continue
                }
                if let key = clientKey, key.isHeader(raw, name) { continue }
                if dropForwarded && Self.isForwardedHeader(raw, name) { continue }
                if dropOverrides && Self.isOverrideHeader(raw, name) { continue }
                if !addHeaders.isEmpty && addHeaders.contains(where: { HeaderName.equals(raw, name, name: $0.name) }) {
                    continue
                }
                if !head.connectionOptions.isEmpty
                    && head.connectionOptions.contains(where: { HeaderName.equals(raw, $0, name) })
                {
                    continue
                }
                buffer.writeHeadField(
                    name: UnsafeRawBufferPointer(rebasing: raw[name]),
                    value: UnsafeRawBufferPointer(rebasing: raw[field.value])
                )
            }
        }
        // Framing comes from the parsed head, never from what remains after removal, so a hostile
        // `Connection: content-length` cannot desynchronise the upstream connection.
        let framing: RequestFraming
        if let length = head.contentLength {
            buffer.writeHeadField("content-length", String(length))
            framing = .length
        } else if head.isChunked {
            buffer.writeStaticString("transfer-encoding: chunked\r\n")
            framing = .chunked
        } else {
            if head.method == .POST || head.method == .PUT || head.method == .PATCH {
                buffer.writeStaticString("content-length: 0\r\n")
            }
            framing = .none
        }
        // `Upgrade` is hop-by-hop (dropped above): sent again with only the protocols offered.
        let upgrade = UpgradeOffer.decide(head, allowed: settings.value.proxy.allowUpgrades)
        if case .offer(let offer) = upgrade {
            buffer.writeStaticString("connection: upgrade\r\n")
            WireFormat.writeField("upgrade", offer.headerValue, into: &buffer)
        }
        if let token {
            if provesPossession {
                buffer.writeStaticString("authorization: DPoP ")
                buffer.writeString(token.value)
                buffer.writeStaticString("\r\n")
                if let proof { WireFormat.writeField("dpop", proof, into: &buffer) }
            } else {
                WireFormat.writeField("authorization", token.authorizationHeaderValue, into: &buffer)
            }
        }
        if settings.value.proxy.forwardedHeaders {
            let host = clientHost.flatMap { head.bytes.getSlice(at: $0.lowerBound, length: $0.count) }
            if let peer { WireFormat.writeField("x-forwarded-for", peer, into: &buffer) }
            WireFormat.writeField("x-forwarded-proto", "http", into: &buffer)
            if var host {
                buffer.writeStaticString("x-forwarded-host: ")
                buffer.writeBuffer(&host)
                buffer.writeStaticString("\r\n")
            }
            Self.writeForwarded(peer: peer, host: host, into: &buffer)
        }
        for header in settings.value.proxy.addHeaders {
            WireFormat.writeField(header.name, header.value, into: &buffer)
        }
        for (name, value) in trace ?? [] { WireFormat.writeField(name, value, into: &buffer) }
        buffer.writeStaticString("\r\n")
        return (framing, upgrade)
    }

    /// How the body of the response to `request` reaches the client: a body without
    /// Content-Length goes chunked to an HTTP/1.1 client, and to an HTTP/1.0 client it ends with
    /// the connection.
    /// (The request's method and version, not its head: passing a head held by the exchange
    /// would copy it.)
    static func clientFraming(_ head: ResponseHead, method: RequestMethod, version: WireVersion) -> ResponseFraming {
        if method == .HEAD || head.status == 204 || head.status == 304 { return .none }
        if head.contentLength != nil { return .length }
        return version.minor >= 1 ? .chunked : .close
    }

    /// Writes the response head for the client: the upstream's status, the client's HTTP
    /// version, hop-by-hop headers removed, `Connection` saying whether bearerd keeps the client
    /// connection open, and the framing the body will be sent with.
    static func clientResponse(
        _ head: ResponseHead,
        version: WireVersion,
        framing: ResponseFraming,
        close: Bool,
        into buffer: inout ByteBuffer
    ) {
        buffer.writeStaticString(version.minor == 0 ? "HTTP/1.0 " : "HTTP/1.1 ")
        head.bytes.withUnsafeReadableBytes { raw in
            // The head starts with `HTTP/1.x NNN`; the reason phrase was checked by the parser.
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[9..<12]))
            buffer.writeInteger(UInt8(ascii: " "))
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            buffer.writeStaticString("\r\n")
            for field in head.fields {
                if HeaderName.isHopByHop(raw, field.name) { continue }
                // The length is written below from the parsed value: a `Connection:
                // content-length` must not strip it while the body is still framed by it.
                if HeaderName.equals(raw, field.name, "content-length") { continue }
                if !head.connectionOptions.isEmpty
                    && head.connectionOptions.contains(where: { HeaderName.equals(raw, $0, field.name) })
                {
                    continue
                }
                buffer.writeHeadField(
                    name: UnsafeRawBufferPointer(rebasing: raw[field.name]),
                    value: UnsafeRawBufferPointer(rebasing: raw[field.value])
                )
            }
        }
        // A 204 carries no length (RFC 9110 §8.6); a HEAD or 304 answer states the length the
        // body would have.
        if let length = head.contentLength, head.status != 204 {
            buffer.writeHeadField("content-length", String(length))
        }
        if framing == .chunked { buffer.writeStaticString("transfer-encoding: chunked\r\n") }
        if close {
            buffer.writeStaticString("connection: close\r\n")
        } else if version.minor == 0 {
            buffer.writeStaticString("connection: keep-alive\r\n")
        }
        buffer.writeStaticString("\r\n")
    }

    /// Writes the upstream's 101 for the client: its fields but the hop-by-hop ones, then
    /// `Connection: upgrade` and `upgrade`, the one protocol the upstream named (RFC 9110 §15.2.2).
    static func switchingResponse(_ head: ResponseHead, upgrade: String, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("HTTP/1.1 101 ")
        head.bytes.withUnsafeReadableBytes { raw in
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: raw[head.reason]))
            buffer.writeStaticString("\r\n")
            for field in head.fields {
                if HeaderName.isHopByHop(raw, field.name) || HeaderName.equals(raw, field.name, "content-length") {
                    continue
                }
                buffer.writeHeadField(
                    name: UnsafeRawBufferPointer(rebasing: raw[field.name]),
                    value: UnsafeRawBufferPointer(rebasing: raw[field.value])
                )
            }
        }
        buffer.writeStaticString("connection: upgrade\r\n")
        WireFormat.writeField("upgrade", upgrade, into: &buffer)
        buffer.writeStaticString("\r\n")
    }

    /// RFC 7239 `Forwarded`, from what bearerd saw: `for=` the peer (quoted with brackets when
    /// IPv6), `proto=http`, `host=` the client's `Host` (already checked to be a plain host[:port]).
    private static func writeForwarded(peer: String?, host: ByteBuffer?, into buffer: inout ByteBuffer) {
        buffer.writeStaticString("forwarded: ")
        if let peer {
            if peer.utf8.contains(UInt8(ascii: ":")) {
                buffer.writeStaticString("for=\"[")
                buffer.writeString(peer)
                buffer.writeStaticString("]\";")
            } else {
                buffer.writeStaticString("for=")
                buffer.writeString(peer)
                buffer.writeStaticString(";")
            }
        }
        buffer.writeStaticString("proto=http")
        if var host {
            buffer.writeStaticString(";host=\"")
            buffer.writeBuffer(&host)
            buffer.writeStaticString("\"")
        }
        buffer.writeStaticString("\r\n")
    }

    private static func isForwardedHeader(_ raw: UnsafeRawBufferPointer, _ name: Range<Int>) -> Bool {
        switch name.count {
        case 9: HeaderName.equals(raw, name, "forwarded")
        case 15: HeaderName.equals(raw, name, "x-forwarded-for")
        case 16: HeaderName.equals(raw, name, "x-forwarded-host")
        case 17: HeaderName.equals(raw, name, "x-forwarded-proto")
        default: false
        }
    }

    /// Headers some frameworks and gateways read instead of the method, the path, the host or
    /// the client's address (``OverrideHeaders``), which would undo the method and path lists
    /// (`proxy.pass_override_headers`). `Forwarded` too: bearerd writes it only when
    /// `proxy.forwarded_headers` says so.
    static func isOverrideHeader(_ raw: UnsafeRawBufferPointer, _ name: Range<Int>) -> Bool {
        guard name.count < Self.overrideNames.count else { return false }
        return Self.overrideNames[name.count].contains { candidate in
            zip(name, candidate).allSatisfy { Self.cgiFolded(raw[$0]) == $1 }
        }
    }

    /// A header name's byte as a CGI-style environment keys it (Rack, Werkzeug, PHP behind a
    /// proxy that passes underscores): any case, and `_` the same as `-`, so `X_Real_IP` is
    /// `X-Real-IP` to them.
    @inline(__always)
    static func cgiFolded(_ byte: UInt8) -> UInt8 {
        byte == UInt8(ascii: "_") ? UInt8(ascii: "-") : byte | 0x20
    }

    /// ``OverrideHeaders/all`` and `forwarded`, by length, as bytes.
    private static let overrideNames: [[[UInt8]]] = {
        let names = OverrideHeaders.all.map { Array($0.name.lowercased().utf8) } + [Array("forwarded".utf8)]
        var table = [[[UInt8]]](repeating: [], count: (names.map(\.count).max() ?? 0) + 1)
        for name in names { table[name.count].append(name) }
        return table
    }()
}
