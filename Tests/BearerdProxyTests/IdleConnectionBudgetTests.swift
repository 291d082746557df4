import BearerdTestSupport
import NIOCore
import NIOPosix
import Testing

@testable import BearerdProxy

/// `upstream.max_idle_connections` bounds the idle connections of every loop's pool together.
@Suite("Idle upstream connections over all event loops")
struct IdleConnectionBudgetTests {
    @Test func twoLoopsKeepNoMoreIdleConnectionsThanTheLimit() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let upstream = try await TestUpstream.start(group: group) { _ in .ok() }
        let settings = try HeaderRewriterTests.settings(
            "",
            url: "http://127.0.0.1:\(upstream.port)"
        )
        let budget = IdleConnectionBudget(limit: 1)
        let loops = Array(group.makeIterator())
        let pools = loops.map { UpstreamConnectionPool(eventLoop: $0, settings: settings, budget: budget) }
        for pool in pools {
            try await pool.eventLoop.flatSubmit { () -> EventLoopFuture<Void> in
                guard case .connecting(let future) = pool.acquire() else {
                    return pool.eventLoop.makeFailedFuture(TestClientError("a new pool had an idle connection"))
                }
                return future.map { connection in pool.release(connection, reusable: true) }
            }.get()
        }
        #expect(budget.inUse == 1, "the second loop's connection was closed, not pooled")
        let reused = try await pools[0].eventLoop.submit { () -> Bool in
            if case .ready = pools[0].acquire() { return true }
            return false
        }.get()
        let reusedElsewhere = try await pools[1].eventLoop.submit { () -> Bool in
            if case .ready = pools[1].acquire() { return true }
            return false
        }.get()
        #expect(reused && !reusedElsewhere)
        #expect(budget.inUse == 0)
        for pool in pools { try await pool.eventLoop.submit { pool.close() }.get() }
        await upstream.stop()
        try await group.shutdownGracefully()
    }

    @Test func theBudgetNeverGoesOverItsLimit() {
        let budget = IdleConnectionBudget(limit: 2)
        #expect(budget.take() && budget.take() && !budget.take())
        budget.give()
        #expect(budget.take() && !budget.take())
        budget.give(2)
        #expect(budget.inUse == 0)
    }
}
