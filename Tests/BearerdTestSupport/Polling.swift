/// Polls `condition` until it holds; throws after `limit`. For what a test cannot await
/// directly: a child process's output, a file another process writes.
package func waitUntil(
    _ limit: Duration = .seconds(15),
    every interval: Duration = .milliseconds(10),
    _ condition: () async -> Bool
) async throws {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while await !condition() {
        guard clock.now < deadline else { throw TestClientError("condition not met within \(limit)") }
        try await Task.sleep(for: interval)
    }
}
