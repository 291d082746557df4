import BearerdAuth
import BearerdWire
import Foundation
import NIOCore
import NIOHTTP1
import Tracing

/// The tracer of the data path (`tracing.endpoint`); absent when tracing is off, and then no
/// exchange does anything for traces.
package struct ProxyTracing: Sendable {
    package let tracer: any Tracer

    package init(tracer: any Tracer) {
        self.tracer = tracer
    }
}

/// One exchange's span (W3C Trace Context): the client's `traceparent` continued, or a trace
/// started; what goes upstream in its place; and what the access line names.
struct ExchangeTrace {
    let span: any Span
    /// `traceparent` (and `tracestate`) as sent upstream: this span as the parent.
    let upstreamFields: [(String, String)]
    /// The trace id, as the access line writes it.
    let traceID: String?
    /// When the exchange began waiting for a token, if it did.
    var tokenWaitStarted: NIODeadline?
    var tokenWait: TimeAmount?

    /// `session`: the session's name in a config with `sessions:` (`bearerd.session`).
    init(head: RequestHead, tracing: ProxyTracing, session: String? = nil) {
        var context = ServiceContext.topLevel
        // Only well-formed fields reach the propagator: swift-otel logs the whole carrier when a
        // field fails to parse, and the head holds the query and the client's other headers.
        let incoming = TraceHeaders(head)
        if incoming.traceparent != nil {
            tracing.tracer.extract(incoming, into: &context, using: TraceHeadersExtractor())
        }
        let route = PathPrefix.of(head.uri)
        let span = tracing.tracer.startAnySpan(
            "\(head.method.rawValue) \(route)",
            context: context,
            ofKind: .server
        )
        span.attributes["http.request.method"] = head.method.rawValue
        span.attributes["bearerd.path_prefix"] = route
        if let session { span.attributes["bearerd.session"] = session }
        var fields: [(String, String)] = []
        tracing.tracer.inject(span.context, into: &fields, using: FieldInjector())
        self.span = span
        self.upstreamFields = fields
        self.traceID = fields.first { $0.0 == "traceparent" }.flatMap { Self.traceID(of: $0.1) }
    }

    /// `00-<trace id>-<span id>-<flags>`: the trace id's 32 hex digits.
    static func traceID(of traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-")
        guard parts.count == 4, parts[1].utf8.count == 32 else { return nil }
        return String(parts[1])
    }

    /// Ends the span of an exchange that ended without its access line (the connection went).
    func abandon() {
        self.span.setStatus(SpanStatus(code: .error, message: "the connection closed"))
        self.span.end()
    }

    /// Ends the span with what the exchange came to.
    func end(status: Int?, upstream: TimeAmount?, retriedAfter401: Bool) {
        if let status {
            self.span.attributes["http.response.status_code"] = status
            if status >= 500 { self.span.setStatus(SpanStatus(code: .error)) }
        } else {
            self.span.setStatus(SpanStatus(code: .error, message: "no response"))
        }
        if let upstream { self.span.attributes["bearerd.upstream_ms"] = Double(upstream.nanoseconds) / 1e6 }
        if let wait = self.tokenWait { self.span.attributes["bearerd.token_wait_ms"] = Double(wait.nanoseconds) / 1e6 }
        if retriedAfter401 { self.span.attributes["bearerd.retried_after_401"] = true }
        self.span.end()
    }
}

/// A request's W3C Trace Context fields, kept only when they are well formed (W3C Trace Context
/// §3.2, §3.3): one `traceparent` of version 00 with lowercase hex ids, not all zero; a
/// `tracestate` of at most 512 printable characters, of `key=value` members. Its description
/// names nothing.
struct TraceHeaders: CustomStringConvertible {
    var traceparent: String?
    var tracestate: String?

    var description: String { "trace context fields" }

    init(_ head: RequestHead) {
        let parents = head.values(of: "traceparent")
        guard parents.count == 1, let parent = parents.first, Self.isTraceparent(parent) else { return }
        self.traceparent = parent
        let state = head.values(of: "tracestate").joined(separator: ",")
        if !state.isEmpty, state.utf8.count <= 512, Self.isTracestate(state) { self.tracestate = state }
    }

    /// `00-<32 hex>-<16 hex>-<2 hex>`, lowercase, ids not all zero.
    static func isTraceparent(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 55, bytes[2] == UInt8(ascii: "-"), bytes[35] == UInt8(ascii: "-"),
            bytes[52] == UInt8(ascii: "-"), bytes[0] == UInt8(ascii: "0"), bytes[1] == UInt8(ascii: "0")
        else { return false }
        let hex = { (byte: UInt8) in
            (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
        }
        let trace = bytes[3..<35]
        let span = bytes[36..<52]
        let flags = bytes[53..<55]
        guard trace.allSatisfy(hex), span.allSatisfy(hex), flags.allSatisfy(hex) else { return false }
        return trace.contains { $0 != UInt8(ascii: "0") } && span.contains { $0 != UInt8(ascii: "0") }
    }

    /// Comma-separated `key=value` members of printable ASCII, each key lowercase.
    static func isTracestate(_ text: String) -> Bool {
        text.split(separator: ",", omittingEmptySubsequences: true).allSatisfy { member in
            let member = member.trimmingCharacters(in: .whitespaces)
            guard let equals = member.firstIndex(of: "="), equals != member.startIndex else { return false }
            let key = member[..<equals]
            let value = member[member.index(after: equals)...]
            return key.utf8.count <= 256 && value.utf8.count <= 256 && !value.isEmpty
                && key.unicodeScalars.allSatisfy {
                    ("a"..."z").contains($0) || ("0"..."9").contains($0) || "_-*/@".unicodeScalars.contains($0)
                }
                && value.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value <= 0x7E && $0 != "," && $0 != "=" }
        }
    }
}

/// The two fields, as a propagator asks for them.
struct TraceHeadersExtractor: Extractor {
    func extract(key: String, from headers: TraceHeaders) -> String? {
        switch key {
        case "traceparent": headers.traceparent
        case "tracestate": headers.tracestate
        default: nil
        }
    }
}

/// Collects what a propagator writes, to be written into the upstream request.
struct FieldInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout [(String, String)]) {
        fields.append((key.lowercased(), value))
    }
}
