import Foundation

/// A PostgreSQL server of the test's own on 127.0.0.1 (Debian's package, through
/// `scripts/postgres`): a fresh data directory and a free port, role `bearerd` with a password,
/// database `bearerd`. ``stop()`` at the end; the directory goes with the object.
package final class PostgresServer: Sendable {
    package let port: Int
    let directory: TemporaryDirectory
    let maxConnections: Int
    /// The certificate it serves TLS with, if any.
    package let certificates: TestCertificates?

    /// `postgres://bearerd:bearerd-pass@127.0.0.1:PORT/bearerd`
    package var url: String { "postgres://bearerd:bearerd-pass@127.0.0.1:\(self.port)/bearerd" }

    private init(port: Int, directory: TemporaryDirectory, maxConnections: Int, certificates: TestCertificates?) {
        self.port = port
        self.directory = directory
        self.maxConnections = maxConnections
        self.certificates = certificates
    }

    /// Starts one; `tls`: with `ssl=on` and a certificate for 127.0.0.1 from a CA of its own.
    package static func start(maxConnections: Int = 200, tls: Bool = false) async throws -> PostgresServer {
        let directory = try TemporaryDirectory()
        let certificates = tls ? try TestCertificates(dnsNames: ["localhost"], ipAddresses: ["127.0.0.1"]) : nil
        return try await FreePort.serve { port in
            let server = PostgresServer(
                port: port,
                directory: directory,
                maxConnections: maxConnections,
                certificates: certificates
            )
            try await server.start()
            return server
        }
    }

    /// Starts it (again: the data are kept).
    package func start() async throws {
        try await ProjectScript.run(
            "scripts/postgres",
            [
                "start", "--dir", self.directory.path, "--port", "\(self.port)",
                "--max-connections", "\(self.maxConnections)",
            ] + (self.certificates.map { ["--tls", $0.certificateFile, $0.keyFile] } ?? [])
        )
    }

    /// Stops it: `immediate` as a crash would, without a checkpoint.
    package func stop(immediate: Bool = false) async throws {
        try await ProjectScript.run(
            "scripts/postgres",
            ["stop", "--dir", self.directory.path] + (immediate ? ["--immediate"] : [])
        )
    }

    /// Stops (SIGSTOP) or resumes the server and its backends: a database that stops answering
    /// without closing its connections, as behind a network partition.
    package func pause(_ paused: Bool = true) async throws {
        try await ProjectScript.run("scripts/postgres", [paused ? "pause" : "resume", "--dir", self.directory.path])
    }

    /// Runs `sql` as the superuser in the database `bearerd`; returns psql's unaligned output.
    /// Waits without blocking a thread: two tests blocked in `waitUntilExit` at once held both of
    /// a 2-core machine's cooperative threads, and every other test (the one whose lock the
    /// statement waited for among them) stopped with them.
    @discardableResult
    package func sql(_ sql: String) async throws -> String {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("psql-\(UUID().uuidString).out")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw TestClientError("cannot create \(log.path)")
        }
        defer { try? FileManager.default.removeItem(at: log) }
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let process = ChildProcess()
        process.executableURL = ProjectScript.repository.appendingPathComponent("scripts/postgres")
        process.arguments = ["psql", "--dir", self.directory.path, "--port", "\(self.port)", "-c", sql]
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try process.run()
        try await waitUntil(.seconds(60)) { !process.isRunning }
        let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        guard process.terminationStatus == 0 else { throw TestClientError("psql failed: \(text)") }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Writes the URL file a config names (`store.postgres.url_file`), mode 0400.
    package func writeURL(in directory: TemporaryDirectory, name: String = "postgres.url") throws -> String {
        try directory.write(self.url + "\n", to: name, mode: 0o400)
    }
}
