import ServiceLifecycle

/// The proactive refresh timer as a service: it runs until graceful shutdown begins. Requests
/// that find the token expired still refresh it on demand after that.
package struct TokenRefreshService: Service {
    let manager: TokenManager

    package init(manager: TokenManager) {
        self.manager = manager
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.manager.runScheduler()
        }
    }
}

extension TokenRefreshService: CustomStringConvertible {
    /// What service-lifecycle logs: the name, not a dump of the engine.
    package var description: String { "TokenRefreshService" }
}
