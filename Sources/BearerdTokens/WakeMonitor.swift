import ServiceLifecycle

/// Looks at the clocks every ``interval`` so that a wake or a clock step is noticed promptly
/// even when no request comes (``TokenManager/noticeClockJumps()``): the token is then refreshed
/// at once if it is due. Three clock reads and one hop to the engine per look.
package struct WakeMonitor: Service {
    /// How often the clocks are looked at.
    package static let interval: Duration = .seconds(2)

    let manager: TokenManager

    package init(manager: TokenManager) {
        self.manager = manager
    }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.interval)
                if Task.isCancelled { return }
                await self.manager.noticeClockJumps()
            }
        }
    }
}

extension WakeMonitor: CustomStringConvertible {
    package var description: String { "WakeMonitor" }
}
