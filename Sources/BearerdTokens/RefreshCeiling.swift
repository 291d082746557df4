import Synchronization

/// `callers.max_refreshes_per_minute`: the token endpoint's requests of every user of a
/// `per_caller` session together, at most so many in any minute, so that many users cannot make
/// bearerd flood the token server. A request over the ceiling is not sent: the user's engine
/// takes it as a network failure and tries again later, its tokens kept.
package final class RefreshCeiling: TokenTransport {
    let transport: any TokenTransport
    let limit: Int
    /// Nanoseconds on a monotonic clock.
    let now: @Sendable () -> Int64
    private let sent = Mutex<[Int64]>([])

    package init(_ transport: any TokenTransport, limit: Int, now: @escaping @Sendable () -> Int64) {
        self.transport = transport
        self.limit = max(1, limit)
        self.now = now
    }

    package struct Reached: Error, CustomStringConvertible {
        let limit: Int
        package var description: String {
            "the users of this session made \(self.limit) requests to the token endpoint in the last minute (callers.max_refreshes_per_minute): this one waits and is retried"
        }
    }

    package func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
        let now = self.now()
        let admitted = self.sent.withLock { sent -> Bool in
            let minuteAgo = now - 60_000_000_000
            if let first = sent.firstIndex(where: { $0 > minuteAgo }) {
                sent.removeFirst(first)
            } else {
                sent.removeAll()
            }
            guard sent.count < self.limit else { return false }
            sent.append(now)
            return true
        }
        guard admitted else { throw Reached(limit: self.limit) }
        return try await self.transport.send(request)
    }
}
