import BearerdLogging
import BearerdTestSupport
import Logging
import NIOEmbedded

@testable import BearerdProxy

extension ProxyHandler {
    /// A handler for an `EmbeddedChannel`, as the listeners make one, with a token provider that
    /// always has the token "t" and a pool on the channel's loop.
    static func testing(settings: ProxySettings, viaTCP: Bool, channel: EmbeddedChannel) -> ProxyHandler {
        ProxyHandler(
            settings: ProxySettings.Shared(settings),
            retryBudget: SharedBudget(limit: 1 << 20),
            viaTCP: viaTCP,
            pool: UpstreamConnectionPool(
                eventLoop: channel.eventLoop,
                settings: settings,
                budget: SharedBudget(limit: 1)
            ),
            tokens: RecordingTokenProvider(token: "t"),
            metrics: ProxyMetrics(),
            logger: Logger(label: "test"),
            failures: ThrottledLogger(logger: Logger(label: "test"), eventLoop: channel.eventLoop)
        )
    }
}

extension ThrottledLogger {
    /// A throttled logger whose summaries nobody waits for (on a loop that is never run).
    static var testing: ThrottledLogger {
        ThrottledLogger(logger: Logger(label: "test"), eventLoop: EmbeddedEventLoop())
    }
}
