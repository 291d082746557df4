import Foundation

/// A real OTLP/HTTP trace receiver on 127.0.0.1 (`scripts/otlp-receiver`: opentelemetry-proto's
/// messages decoded in Python), writing each span it receives as a JSON line.
package struct OTLPReceiver: Sendable {
    package let port: Int
    package let directory: TemporaryDirectory

    package var endpoint: String { "http://127.0.0.1:\(self.port)/v1/traces" }

    package static func start() async throws -> OTLPReceiver {
        let directory = try TemporaryDirectory()
        return try await FreePort.serve { port in
            try await ProjectScript.run(
                "scripts/otlp-receiver",
                ["start", "--port", String(port), "--dir", directory.path + "/otlp"]
            )
            return OTLPReceiver(port: port, directory: directory)
        }
    }

    package func stop() async throws {
        try await ProjectScript.run("scripts/otlp-receiver", ["stop", "--dir", self.directory.path + "/otlp"])
    }

    /// Every span received so far: trace_id, span_id, parent_span_id, name, kind, attributes,
    /// links ([{trace_id, span_id}]), status, resource.
    package var spans: [[String: Any]] {
        let text = (try? String(contentsOfFile: self.directory.path + "/otlp/spans.jsonl", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }
    }

    /// The raw text received, to search for what must never be there.
    package var rawText: String {
        (try? String(contentsOfFile: self.directory.path + "/otlp/spans.jsonl", encoding: .utf8)) ?? ""
    }
}
