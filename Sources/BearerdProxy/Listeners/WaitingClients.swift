import Logging
import NIOConcurrencyHelpers
import NIOCore

#if canImport(Glibc)
import Glibc
#endif

/// While `proxy.max_connections` is reached, how many clients wait in the TCP listeners' accept
/// queues (`tcpi_unacked` of a listening socket, sampled once a second):
/// `bearerd_client_connections_waiting`, and a warning every 30 s, so a full proxy is never
/// silent.
final class WaitingClients: Sendable {
    private let limiter: ConnectionLimiter
    private let metrics: ProxyMetrics
    private let logger: Logger
    private let listeners: @Sendable () -> [any Channel]
    private let loop: any EventLoop
    private let task = NIOLockedValueBox<RepeatedTask?>(nil)
    /// The last count reported, and when a warning was last logged.
    private let report = NIOLockedValueBox<(count: Int, loggedAt: NIODeadline?)>((0, nil))

    init(
        limiter: ConnectionLimiter,
        metrics: ProxyMetrics,
        group: any EventLoopGroup,
        logger: Logger,
        listeners: @escaping @Sendable () -> [any Channel]
    ) {
        self.limiter = limiter
        self.metrics = metrics
        self.logger = logger
        self.listeners = listeners
        self.loop = group.next()
        let task = self.loop.scheduleRepeatedTask(initialDelay: .seconds(1), delay: .seconds(1)) {
            [weak self] _ in self?.sample()
        }
        self.task.withLockedValue { $0 = task }
    }

    func stop() {
        self.task.withLockedValue { $0?.cancel() }
    }

    private func sample() {
        guard self.limiter.isFull else {
            let wasWaiting = self.report.withLockedValue { report in
                defer { report.count = 0 }
                return report.count > 0
            }
            if wasWaiting { self.metrics.waitingClients(0) }
            return
        }
        let samples = self.listeners().compactMap { channel in
            (channel as? any SocketOptionProvider)?.getTCPInfo().map { Int($0.tcpi_unacked) }
        }
        EventLoopFuture.whenAllComplete(samples, on: self.loop).whenSuccess { results in
            let waiting = results.reduce(0) { sum, result in sum + ((try? result.get()) ?? 0) }
            self.metrics.waitingClients(waiting)
            let now = self.loop.now
            let log = self.report.withLockedValue { report -> Bool in
                report.count = waiting
                guard waiting > 0, report.loggedAt.map({ now - $0 >= .seconds(30) }) ?? true else { return false }
                report.loggedAt = now
                return true
            }
            if log {
                self.logger.warning(
                    "clients are waiting for a connection slot: proxy.max_connections is reached",
                    metadata: ["waiting": "\(waiting)", "limit": "\(self.limiter.limit)"]
                )
            }
        }
    }
}
