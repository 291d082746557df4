import BearerdAuth
import BearerdConfig
import BearerdProxy
import Foundation
import InMemoryLogging
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// A running proxy in front of a ``TestUpstream``, everything in-process on port 0.
package struct ProxyFixture: Sendable {
    /// The upstream the proxy forwards to.
    package let upstream: TestUpstream
    /// The proxy's listeners.
    package let listeners: ProxyListeners
    /// The event loop group everything runs on.
    package let group: any EventLoopGroup
    /// Every log line the proxy wrote.
    package let logs: InMemoryLogHandler
    /// The configuration the proxy runs with.
    package let configuration: BearerdConfiguration

    /// The first TCP listener's port.
    package var port: Int { self.listeners.addresses.first { $0.port != nil }!.port! }

    /// The token the fixture's static token file holds.
    package static let token = "fixture-token-7d2f9a41c0e8b35566"

    /// Starts an upstream and a proxy configured by `yaml` (top-level keys other than `listen`,
    /// `upstream` and `auth`) and `upstreamYAML` (keys under `upstream:`), runs `body`, and tears
    /// down. `upstreamURL` replaces the test upstream's URL; `PORT` in it becomes its port.
    package static func with<Result: Sendable>(
        yaml: String = "",
        upstreamYAML: String = "",
        listen: [String] = ["127.0.0.1:0"],
        upstreamPath: String = "",
        upstreamURL: String? = nil,
        tokens: (any TokenProvider)? = nil,
        upstreamTLS: NIOSSLContext? = nil,
        responder: Responder = Responder { _ in .ok() },
        dpop: DPoPUpstream? = nil,
        group shared: (any EventLoopGroup)? = nil,
        _ body: (ProxyFixture) async throws -> Result
    ) async throws -> Result {
        // A group of the test's own, shut down at the end; or `shared`, which outlives the test.
        let group = shared ?? MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let stopGroup = { () async throws in if shared == nil { try await group.shutdownGracefully() } }
        let directory = try TemporaryDirectory()
        let upstream = try await TestUpstream.start(group: group, tls: upstreamTLS, responder: responder.respond)
        do {
            let tokenFile = directory.path + "/token"
            try directory.write(Self.token + "\n", to: "token", mode: 0o600)
            let url =
                upstreamURL.map { $0.replacingOccurrences(of: "PORT", with: String(upstream.port)) }
                ?? "http://127.0.0.1:\(upstream.port)\(upstreamPath)"
            let listenYAML = listen.map { "\"\($0)\"" }.joined(separator: ", ")
            let text = """
                listen: [\(listenYAML)]
                upstream:
                  url: \(url)
                \(upstreamYAML.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
                auth:
                  static_token_file: \(tokenFile)
                \(yaml)
                """
            let configuration = try ConfigLoader(environment: [:]).load(
                yaml: text,
                source: "fixture.yaml",
                baseDirectory: directory.path
            )
            let logs = InMemoryLogHandler()
            var handler = logs
            handler.logLevel = .trace
            let captured = handler
            let logger = Logger(label: "bearerd-test") { _ in captured }
            let provider = try tokens ?? StaticTokenProvider(path: tokenFile, logger: logger)
            var settings = try ProxySettings(configuration: configuration)
            settings.dpop = dpop
            let listeners = try await ProxyListeners.bind(
                settings: settings,
                tokens: provider,
                group: group,
                logger: logger
            )
            let fixture = ProxyFixture(
                upstream: upstream,
                listeners: listeners,
                group: group,
                logs: logs,
                configuration: configuration
            )
            let result: Result
            do {
                result = try await body(fixture)
            } catch {
                await listeners.shutdown(grace: .zero)
                throw error
            }
            await listeners.shutdown(grace: .seconds(5))
            await upstream.stop()
            try await stopGroup()
            return result
        } catch {
            await upstream.stop()
            try? await stopGroup()
            throw error
        }
    }

    /// Every log line as text, metadata included, for searching.
    package var logText: String {
        self.logs.entries.map { entry in
            "\(entry.level) \(entry.message) \(entry.metadata.map { "\($0.key)=\($0.value)" }.sorted().joined(separator: " "))"
        }.joined(separator: "\n")
    }
}

extension ProxyFixture {
    /// Sends one request through the proxy on a fresh connection.
    package func send(
        _ method: HTTPMethod = .GET,
        _ uri: String,
        headers: HTTPHeaders = [:],
        text: String? = nil
    ) async throws -> TestHTTPResponse {
        try await TestHTTPClient.withConnection(to: .tcp(port: self.port), group: self.group) { client in
            if let text { return try await client.send(method, uri, headers: headers, text: text) }
            return try await client.send(method, uri, headers: headers)
        }
    }

    /// `127.0.0.1:PORT`: the proxy's own name, as clients send it in `Host`.
    package var host: String { "127.0.0.1:\(self.port)" }

    /// Sends raw bytes to the proxy and returns all it answers until it closes the connection.
    /// `{host}` in `request` becomes ``host``, and `{port}` the proxy's port.
    package func raw(_ request: String) async throws -> String {
        try await RawClient.exchange(
            port: self.port,
            request.replacingOccurrences(of: "{host}", with: self.host)
                .replacingOccurrences(of: "{port}", with: String(self.port)),
            group: self.group
        )
    }
}
