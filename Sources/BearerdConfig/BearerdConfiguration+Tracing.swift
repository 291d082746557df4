import BearerdAuth
import Foundation

extension BearerdConfiguration {
    /// `tracing.*`: OpenTelemetry traces of requests and token refreshes, sent over OTLP/HTTP.
    /// Off unless `tracing.endpoint` is set.
    package struct Tracing: Sendable, Equatable {
        /// `tracing.endpoint`: where spans are sent (OTLP/HTTP, protobuf); `nil`: off.
        package var endpoint: String?
        /// `tracing.sample_ratio`: the share of new traces recorded; a request that arrives with a
        /// `traceparent` follows its sampled flag.
        package var sampleRatio: Double
        /// `tracing.service_name`: the `service.name` of the spans.
        package var serviceName: String

        package static let off = Tracing(endpoint: nil, sampleRatio: 1, serviceName: "bearerd")

        package init(endpoint: String?, sampleRatio: Double, serviceName: String) {
            self.endpoint = endpoint
            self.sampleRatio = sampleRatio
            self.serviceName = serviceName
        }

        init(reading builder: inout ConfigBuilder) {
            typealias Keys = ConfigKeys.Tracing
            let endpoint = builder.string(Keys.endpoint)
            if let endpoint {
                builder.checkHTTPURL(endpoint, key: Keys.endpoint.name)
            }
            let ratio =
                builder.parsed(Keys.sampleRatio, expected: "a number from 0 to 1") { text in
                    Double(text).flatMap { $0.isFinite && (0...1).contains($0) ? $0 : nil }
                } ?? 1
            let name = builder.string(Keys.serviceName) ?? "bearerd"
            if name.isEmpty || name.utf8.count > 128
                || name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F })
            {
                builder.issue(Keys.serviceName.name, "must be 1 to 128 printable characters")
            }
            self.init(endpoint: endpoint, sampleRatio: ratio, serviceName: name)
        }
    }
}

extension ConfigKeys {
    /// `tracing.*`.
    package enum Tracing {
        static let endpoint = ConfigKeyDescriptor.text(
            "tracing.endpoint",
            "an OTLP/HTTP URL",
            reload: .restart,
            sample: .commented("http://127.0.0.1:4318/v1/traces"),
            doc: """
                OpenTelemetry traces, sent as OTLP/HTTP (protobuf) to this URL, e.g. a collector's
                http://127.0.0.1:4318/v1/traces. A span per proxied request (method, path prefix, status,
                upstream time, whether it waited for a token or was retried after a 401) and one per token
                refresh (grant, reason, result, server time), linked to the requests that waited for it. A
                request's W3C traceparent is continued (or a trace started) and sent upstream, and its
                trace_id written in the access line. Never a token, a query string or a secret in a span.
                Off by default, and then nothing is done per request. Of the OTEL_* environment variables
                only OTEL_EXPORTER_OTLP_HEADERS (a collector's key, never logged) and OTEL_RESOURCE_ATTRIBUTES
                are taken; the others are ignored, with a notice naming them.
                """
        )
        static let sampleRatio = ConfigKeyDescriptor.text(
            "tracing.sample_ratio",
            "a number from 0 to 1",
            default: "1",
            reload: .restart,
            sample: .commented("1"),
            doc: """
                The share of new traces recorded (1: all). A request that brings a traceparent follows its
                sampled flag.
                """
        )
        static let serviceName = ConfigKeyDescriptor.text(
            "tracing.service_name",
            "a name",
            default: "bearerd",
            reload: .restart,
            sample: .commented("bearerd"),
            doc: "The spans' service.name."
        )

        static let section = ConfigSection(
            "tracing",
            commented: true,
            [.key(endpoint), .key(sampleRatio), .key(serviceName)]
        )
    }
}
