import Synchronization

/// `callers.max_refreshes_per_minute`: the token endpoint's requests of every user of a
/// `per_caller` session together, at most so many in any minute, so that many users cannot make
/// bearerd flood the token server; and no one user more than half of them, so that one user's
/// logins (or a loop of them) cannot hold everyone else's refreshes back. A request over either is
/// not sent: the user's engine takes it as a network failure and tries again later, its tokens
/// kept.
package final class RefreshCeiling: Sendable {
    let transport: any TokenTransport
    let limit: Int
    /// What one user may take of `limit`.
    let share: Int
    /// Nanoseconds on a monotonic clock.
    let now: @Sendable () -> Int64
    private let sent = Mutex<(all: [Int64], byUID: [UInt32: [Int64]])>(([], [:]))

    package init(_ transport: any TokenTransport, limit: Int, now: @escaping @Sendable () -> Int64) {
        self.transport = transport
        self.limit = max(1, limit)
        self.share = max(1, self.limit / 2)
        self.now = now
    }

    /// The transport of the user `uid`.
    package func forUser(_ uid: UInt32) -> any TokenTransport {
        UserShare(ceiling: self, uid: uid)
    }

    package struct Reached: Error, CustomStringConvertible {
        let limit: Int
        let yours: Bool
        package var description: String {
            self.yours
                ? "you made \(self.limit) requests to the token endpoint in the last minute, half of what this session's users may make together (callers.max_refreshes_per_minute): this one waits and is retried"
                : "the users of this session made \(self.limit) requests to the token endpoint in the last minute (callers.max_refreshes_per_minute): this one waits and is retried"
        }
    }

    func send(_ request: TokenHTTPRequest, uid: UInt32) async throws -> TokenHTTPResponse {
        let now = self.now()
        let minuteAgo = now - 60_000_000_000
        let refusal = self.sent.withLock { sent -> Reached? in
            sent.all.removeFirst(sent.all.prefix { $0 <= minuteAgo }.count)
            var own = sent.byUID[uid] ?? []
            own.removeFirst(own.prefix { $0 <= minuteAgo }.count)
            defer { sent.byUID[uid] = own.isEmpty ? nil : own }
            if sent.all.count >= self.limit { return Reached(limit: self.limit, yours: false) }
            if own.count >= self.share { return Reached(limit: self.share, yours: true) }
            sent.all.append(now)
            own.append(now)
            // Users with nothing in the last minute are forgotten, so the table stays small.
            if sent.byUID.count > 4 * self.limit {
                sent.byUID = sent.byUID.filter { $0.value.last.map { $0 > minuteAgo } ?? false }
            }
            return nil
        }
        if let refusal { throw refusal }
        return try await self.transport.send(request)
    }

    struct UserShare: TokenTransport {
        let ceiling: RefreshCeiling
        let uid: UInt32

        func send(_ request: TokenHTTPRequest) async throws -> TokenHTTPResponse {
            try await self.ceiling.send(request, uid: self.uid)
        }
    }
}
