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

    init(head: RequestHead, tracing: ProxyTracing) {
        var context = ServiceContext.topLevel
        tracing.tracer.extract(head, into: &context, using: RequestHeadExtractor())
        let span = tracing.tracer.startAnySpan(
            "\(head.method.rawValue) \(Self.pathPrefix(head.uri))",
            context: context,
            ofKind: .server
        )
        span.attributes["http.request.method"] = head.method.rawValue
        span.attributes["bearerd.path_prefix"] = Self.pathPrefix(head.uri)
        var fields: [(String, String)] = []
        tracing.tracer.inject(span.context, into: &fields, using: FieldInjector())
        self.span = span
        self.upstreamFields = fields
        self.traceID = fields.first { $0.0 == "traceparent" }.flatMap { Self.traceID(of: $0.1) }
    }

    /// The first segment of the path (`/api` of `/api/v1/users/42?x=1`): a route's rough name,
    /// never an id or a query.
    static func pathPrefix(_ uri: String) -> String {
        guard uri.utf8.first == UInt8(ascii: "/") else { return "/" }
        let path = uri.dropFirst().prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard path.utf8.count <= 64, path.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            return "/"
        }
        return "/" + path
    }

    /// `00-<trace id>-<span id>-<flags>`: the trace id's 32 hex digits.
    static func traceID(of traceparent: String) -> String? {
        let parts = traceparent.split(separator: "-")
        guard parts.count == 4, parts[1].utf8.count == 32 else { return nil }
        return String(parts[1])
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

/// The W3C fields of a request head, as a propagator asks for them.
struct RequestHeadExtractor: Extractor {
    func extract(key: String, from head: RequestHead) -> String? {
        let values: [String]
        switch key {
        case "traceparent": values = head.values(of: "traceparent")
        case "tracestate": values = head.values(of: "tracestate")
        default: return nil
        }
        // Two traceparent fields are no trace context (W3C Trace Context §3.2.2.1).
        guard !values.isEmpty, key != "traceparent" || values.count == 1 else { return nil }
        let value = values.joined(separator: ",")
        return value.utf8.count <= 512 ? value : nil
    }
}

/// Collects what a propagator writes, to be written into the upstream request.
struct FieldInjector: Injector {
    func inject(_ value: String, forKey key: String, into fields: inout [(String, String)]) {
        fields.append((key.lowercased(), value))
    }
}
