import BearerdConfig
import Logging
import OTel
import ServiceLifecycle
import Tracing

#if canImport(Glibc)
import Glibc
#endif

/// `tracing.endpoint`: swift-otel's OTLP/HTTP exporter (protobuf) with a batch processor, W3C
/// Trace Context, a parent-based ratio sampler, and its own diagnostics (warnings and worse,
/// without their metadata) in bearerd's log. Its service runs for the daemon's life and sends
/// what is left at shutdown.
enum DaemonTracing {
    /// The `OTEL_*` variables swift-otel may still read: a collector's credentials and the
    /// resource's attributes. The config's keys say the rest. swift-otel reads the environment
    /// itself, stops the process for an exporter, propagator or sampler this build leaves out
    /// (gRPC, baggage, B3, Jaeger…), and logs each override with its value (a collector's API
    /// key): every other `OTEL_*` variable is taken out of the environment before it looks.
    static let kept: Set<String> = [
        "OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_RESOURCE_ATTRIBUTES",
    ]

    static func make(
        _ tracing: BearerdConfiguration.Tracing,
        environment: [String: String],
        logger: Logger
    ) throws -> (tracer: any Tracer, service: any Service)? {
        guard let endpoint = tracing.endpoint else { return nil }
        if environment["OTEL_SDK_DISABLED"]?.lowercased() == "true" {
            logger.notice("OTEL_SDK_DISABLED=true: traces are off, whatever tracing.endpoint says")
            return nil
        }
        let ignored = environment.keys.filter { $0.hasPrefix("OTEL_") && !Self.kept.contains($0) }.sorted()
        if !ignored.isEmpty {
            for name in ignored { unsetenv(name) }
            logger.notice(
                "OTEL_* variables ignored: the tracing.* keys configure traces",
                metadata: ["variables": "\(ignored.joined(separator: ","))", "kept": "headers, resource attributes"]
            )
        }
        var configuration = OTel.Configuration.default
        configuration.serviceName = tracing.serviceName
        configuration.diagnosticLogger = .custom(Logger(label: "bearerd.otel") { _ in QuietHandler(logger) })
        configuration.diagnosticLogLevel = .warning
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

    /// swift-otel's diagnostics at warning and worse, into bearerd's log without their
    /// metadata, which may hold an override's value or an exporter's header.
    struct QuietHandler: LogHandler {
        let target: Logger
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .warning

        init(_ target: Logger) { self.target = target }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { self.metadata[key] }
            set { self.metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            guard event.level >= .warning else { return }
            self.target.log(level: event.level, "tracing: \(event.message)")
        }
    }
}
