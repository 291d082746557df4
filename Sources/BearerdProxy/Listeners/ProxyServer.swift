import BearerdAuth
import BearerdSockets
import Logging
import NIOCore
import NIOHTTP1
import ServiceLifecycle

/// The proxy as a long-running `Service`: binds the listeners, serves until graceful shutdown
/// (SIGTERM/SIGINT through the `ServiceGroup`), then drains for up to `shutdown_grace`.
package struct ProxyServer: Service {
    private let settings: ProxySettings
    private let tokens: any TokenProvider
    private let group: any EventLoopGroup
    private let logger: Logger
    private let passed: [Int32]
    private let control: ProxyControl
    private let onListening: @Sendable ([SocketAddress]) -> Void

    /// Creates the service; nothing is bound until ``run()``. With `passed` (socket activation),
    /// those listening sockets are served instead of the `listen` addresses.
    package init(
        settings: ProxySettings,
        tokens: any TokenProvider,
        group: any EventLoopGroup,
        logger: Logger,
        passed: [Int32] = [],
        control: ProxyControl = ProxyControl(),
        onListening: @escaping @Sendable ([SocketAddress]) -> Void = { _ in }
    ) {
        self.control = control
        self.settings = settings
        self.tokens = tokens
        self.group = group
        self.logger = logger
        self.passed = passed
        self.onListening = onListening
    }

    package func run() async throws {
        let listeners = try await ProxyListeners.bind(
            passed: self.passed,
            settings: self.settings,
            tokens: self.tokens,
            group: self.group,
            logger: self.logger
        )
        self.logger.notice(
            "listening",
            metadata: [
                "addresses": .string(listeners.addresses.map(\.bearerdDescription).joined(separator: ",")),
                "upstream": .string(self.settings.upstream.target.description),
            ]
        )
        self.control.attach(listeners)
        self.onListening(listeners.addresses)
        try? await gracefulShutdown()
        self.control.attach(nil)
        self.logger.notice("shutting down: no new connections; waiting for in-flight requests")
        let drained = await listeners.shutdown(grace: self.settings.listeners.shutdownGrace)
        self.logger.notice("stopped", metadata: ["drained": "\(drained)"])
    }
}

extension ProxyServer: CustomStringConvertible {
    /// What service-lifecycle logs: the name, not a dump of the configuration.
    package var description: String { "ProxyServer(upstream: \(self.settings.upstream.target))" }
}
