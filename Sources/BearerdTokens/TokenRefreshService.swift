import ServiceLifecycle

/// The proactive refresh timer as a service: it runs until graceful shutdown begins. Requests
/// that find the token expired still refresh it on demand after that.
public struct TokenRefreshService: Service {
    let manager: TokenManager

    public init(manager: TokenManager) {
        self.manager = manager
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown {
            await self.manager.runScheduler()
        }
    }
}

extension TokenRefreshService: CustomStringConvertible {
    /// What service-lifecycle logs: the name, not a dump of the engine.
    public var description: String { "TokenRefreshService" }
}
