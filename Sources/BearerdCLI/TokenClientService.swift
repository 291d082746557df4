import ServiceLifecycle

/// The token engine's HTTP client as a service of the group. It is first in the group, so it is
/// told to stop last, after the proxy and the refresh timer; then it waits for a refresh in
/// flight to be stored (a rotated refresh token must not be lost) and closes the client.
struct TokenClientService: Service, CustomStringConvertible {
    let engine: TokenEngine

    var description: String { "TokenClientService" }

    func run() async throws {
        try? await gracefulShutdown()
        await self.engine.close()
    }
}
