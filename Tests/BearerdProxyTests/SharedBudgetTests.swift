import BearerdTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing

@testable import BearerdProxy
@testable import BearerdWire

/// `upstream.max_idle_connections` bounds the idle connections of every loop's pool together.
@Suite("Budgets shared by every event loop")
struct SharedBudgetTests {
    @Test func twoLoopsKeepNoMoreIdleConnectionsThanTheLimit() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let upstream = try await TestUpstream.start(group: group) { _ in .ok() }
        let settings = try HeaderRewriterTests.settings(
            "",
            url: "http://127.0.0.1:\(upstream.port)"
        )
        let budget = SharedBudget(limit: 1)
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
        let budget = SharedBudget(limit: 2)
        #expect(budget.take() && budget.take() && !budget.take())
        budget.give()
        #expect(budget.take() && !budget.take())
        budget.give(2)
        #expect(budget.inUse == 0)
    }
}

@Suite("The retry buffer")
struct RetryBufferTests {
    /// 1-byte pieces used to cost a ByteBuffer each (several times their size); now they share
    /// one buffer whose capacity is what the budget counts.
    @Test func smallPiecesShareOneBufferWhoseCapacityIsCounted() {
        let budget = SharedBudget(limit: 1 << 20)
        var kept = RetryBody(budget: budget)
        for _ in 0..<1000 { kept.keep(ByteBuffer(string: "x"), limit: 64 << 10) }
        #expect(kept.body?.readableBytes == 1000)
        #expect(kept.reserved == kept.body?.capacity)
        #expect(budget.inUse == kept.reserved && kept.reserved < 4096)
        kept.drop()
        #expect(budget.inUse == 0 && !kept.isKept)
    }

    @Test func aBodyOverTheLimitOrTheSharedTotalIsNotKept() {
        let budget = SharedBudget(limit: 4096)
        var big = RetryBody(budget: budget)
        big.keep(ByteBuffer(repeating: 1, count: 3000), limit: 2000)
        #expect(!big.isKept && big.body == nil && budget.inUse == 0)
        var first = RetryBody(budget: budget)
        first.keep(ByteBuffer(repeating: 1, count: 3000), limit: 64 << 10)
        var second = RetryBody(budget: budget)
        second.keep(ByteBuffer(repeating: 1, count: 3000), limit: 64 << 10)
        #expect(first.isKept && !second.isKept, "the shared total holds one of them")
        #expect(budget.inUse == first.reserved)
    }

    @Test func anExchangeThatEndsGivesItsBytesBack() {
        let budget = SharedBudget(limit: 1 << 20)
        do {
            let exchange = Exchange(request: .placeholder, startedAt: .now())
            exchange.retryBody = RetryBody(budget: budget)
            exchange.retryBody.keep(ByteBuffer(repeating: 1, count: 500), limit: 64 << 10)
            #expect(budget.inUse > 0)
        }
        #expect(budget.inUse == 0)
    }
}
