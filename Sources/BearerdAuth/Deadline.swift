/// Runs `body` against a deadline: when `limit` passes first, `expired` decides. It throws to
/// give up on `body` (which is then cancelled), or returns to keep waiting for it (a connection
/// already leased runs its statements to their own end). The one race of a task and a timer
/// behind the token request's deadline and the fleet's connection and statement deadlines.
package func withDeadline<T: Sendable>(
    _ limit: Duration,
    _ body: @escaping @Sendable () async throws -> T,
    expired: () async throws -> Void
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        while let next = try await group.next() {
            if let value = next { return value }
            if Task.isCancelled { break }
            try await expired()
        }
        throw CancellationError()
    }
}
