import BearerdConfig
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// `tracing.endpoint`: swift-otel's OTLP/HTTP exporter (protobuf) with a batch processor, W3C
/// Trace Context, a parent-based ratio sampler, and its own diagnostics in bearerd's log. Its
/// service runs for the daemon's life and sends what is left at shutdown.
enum DaemonTracing {
    static func make(
        _ tracing: BearerdConfiguration.Tracing,
        environment: [String: String],
        logger: Logger
    ) throws -> (tracer: any Tracer, service: any Service)? {
        guard let endpoint = tracing.endpoint else { return nil }
        // swift-otel reads OTEL_* itself, and stops the process for an exporter this build leaves
        // out (gRPC, the console): refused here with a message instead.
        for name in ["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] {
            if let value = environment[name], value != "http/protobuf", value != "http/json" {
                throw CommandError(
                    key: "tracing.endpoint",
                    "\(name)=\(value.prefix(40)): bearerd sends OTLP over HTTP only; unset it, or set http/protobuf"
                )
            }
        }
        if let value = environment["OTEL_TRACES_EXPORTER"], value != "otlp" {
            throw CommandError(
                key: "tracing.endpoint",
                "OTEL_TRACES_EXPORTER=\(value.prefix(40)): bearerd exports traces over OTLP only; unset it, or leave tracing.endpoint out to turn traces off"
            )
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = tracing.serviceName
        configuration.diagnosticLogger = .custom(logger)
        configuration.propagators = [.traceContext]
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = endpoint
        configuration.traces.otlpExporter.timeout = .seconds(5)
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        if let sampler = OTel.Configuration.TracesConfiguration.SamplerConfiguration.parentBasedTraceIDRatio(
            ratio: tracing.sampleRatio
        ) {
            configuration.traces.sampler = sampler
        }
        do {
            let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
            return (tracer, service)
        } catch {
            throw CommandError(key: "tracing.endpoint", "cannot set up the OTLP exporter: \(error)")
        }
    }
}
