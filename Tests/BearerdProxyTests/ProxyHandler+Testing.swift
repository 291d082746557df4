import BearerdTestSupport
import Logging
import NIOEmbedded

@testable import BearerdProxy

extension ProxyHandler {
    /// A handler for an `EmbeddedChannel`, as the listeners make one, with a token provider that
    /// always has the token "t" and a pool on the channel's loop.
    static func testing(settings: ProxySettings, viaTCP: Bool, channel: EmbeddedChannel) -> ProxyHandler {
        ProxyHandler(
            settings: settings,
            retryBudget: SharedBudget(limit: 1 << 20),
            viaTCP: viaTCP,
            pool: UpstreamConnectionPool(
                eventLoop: channel.eventLoop,
                settings: settings,
                budget: SharedBudget(limit: 1)
            ),
            tokens: RecordingTokenProvider(token: "t"),
            metrics: ProxyMetrics(),
            logger: Logger(label: "test")
        )
    }
}
