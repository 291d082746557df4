import BearerdTestSupport
import Foundation
import Logging
import NIOConcurrencyHelpers
import NIOCore
import NIOHTTP1
import Testing

@testable import BearerdProxy

@Suite("Limits and slow clients", .timeLimit(.minutes(1)))
struct ProxyLimitsTests {
    static let limits = """
        proxy:
          max_request_line: 1KiB
          max_header_count: 10
          max_header_size: 2KiB
        """

    @Test(
        "an oversized request line or head is refused before anything goes upstream",
        arguments: [
            ("GET /\(String(repeating: "a", count: 1100)) HTTP/1.1\r\nHost: {host}\r\n\r\n", "414", "max_request_line"),
            (
                "GET /x HTTP/1.1\r\nHost: {host}\r\n"
                    + (1...10).map { "X-\($0): v\r\n" }.joined() + "\r\n",
                "431", "max_header_count"
            ),
            (
                "GET /x HTTP/1.1\r\nHost: {host}\r\nX-A: \(String(repeating: "a", count: 1100))\r\n"
                    + "X-B: \(String(repeating: "b", count: 1100))\r\n\r\n",
                "431", "max_header_size"
            ),
            (
                "GET /x HTTP/1.1\r\nHost: {host}\r\nX-A: \(String(repeating: "a", count: 3000))\r\n\r\n",
                "431", "max_header_size"
            ),
        ]
    )
    func oversized(request: String, status: String, key: String) async throws {
        try await ProxyFixture.with(yaml: Self.limits) { proxy in
            // Refused bodyless requests keep their connection; ask for a close to see the end.
            let raw = try await proxy.raw(
                request.replacingOccurrences(of: "Host: {host}\r\n", with: "Host: {host}\r\nConnection: close\r\n")
            )
            #expect(raw.hasPrefix("HTTP/1.1 \(status) "), "\(raw.prefix(200))")
            #expect(raw.contains("proxy.\(key)"), "\(raw.prefix(300))")
            #expect(proxy.upstream.connectionCount == 0)
        }
    }

    @Test func headsWithinTheLimitsPass() async throws {
        try await ProxyFixture.with(yaml: Self.limits) { proxy in
            let headers = (1...8).map { "X-\($0): v\r\n" }.joined()
            let raw = try await proxy.raw(
                "GET /\(String(repeating: "a", count: 1000)) HTTP/1.1\r\nHost: {host}\r\n\(headers)Connection: close\r\n\r\n"
            )
            #expect(raw.hasPrefix("HTTP/1.1 200 "), "\(raw.prefix(200))")
        }
    }

    @Test func connectionsOverTheLimitWaitUntilOneCloses() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  max_connections: 2") { proxy in
            let request = "GET /held HTTP/1.1\r\nHost: \(proxy.host)\r\n\r\n"
            try await RawConnection.with(port: proxy.port, group: proxy.group) { first in
                try await first.send(request)
                #expect(try await first.read(until: "\r\n\r\nok").hasPrefix("HTTP/1.1 200 "))
                try await RawConnection.with(port: proxy.port, group: proxy.group) { second in
                    try await second.send(request)
                    #expect(try await second.read(until: "\r\n\r\nok").hasPrefix("HTTP/1.1 200 "))
                    // Both stay open (kept alive): a third connection is queued, not served. The
                    // sampler sees it in the listener's accept queue (AcceptGateTests has the gate
                    // itself, read by read).
                    try await RawConnection.with(port: proxy.port, group: proxy.group) { third in
                        try await third.send("GET /third HTTP/1.1\r\nHost: \(proxy.host)\r\n\r\n")
                        try await waitUntil(.seconds(10)) { proxy.logText.contains("waiting=1") }
                        #expect(proxy.upstream.requests.count == 2, "the third connection was served")
                        try await first.send("GET /bye HTTP/1.1\r\nHost: \(proxy.host)\r\nConnection: close\r\n\r\n")
                        _ = try await first.read(until: "never")
                        let answer = try await third.read(until: "\r\n\r\nok")
                        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(200))")
                    }
                }
            }
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/held", "/held", "/bye", "/third"])
            #expect(proxy.logText.contains("proxy.max_connections reached"))
        }
    }

    /// A client still sending when bearerd refuses it gets the answer and an orderly end, over a
    /// real socket. The half-close, the dropped rest and the linger time are checked exactly on a
    /// manual clock (LingerTests); a reset here would be a race this test only sometimes wins.
    @Test func aClientStillSendingGetsTheRefusalNotAReset() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  max_request_body: 1KiB") { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                try await connection.send("POST /x HTTP/1.1\r\nHost: \(proxy.host)\r\nContent-Length: 4000000\r\n\r\n")
                // The body keeps coming after the 413; the answer is read last, when a reset
                // would already have thrown it away.
                let chunk = String(repeating: "b", count: 64 << 10)
                for _ in 0..<16 {
                    do { try await connection.send(chunk) } catch { break }
                }
                let answer = try await connection.read(until: "never")
                #expect(answer.hasPrefix("HTTP/1.1 413 "), "\(answer.prefix(200))")
            }
            #expect(proxy.upstream.connectionCount == 0)
        }
    }

    static let slow = """
        proxy:
          header_timeout: 300ms
        """

    @Test func aHeadNotCompleteInTimeGets408AndNothingGoesUpstream() async throws {
        try await ProxyFixture.with(yaml: Self.slow) { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                try await connection.send("GET /x HTTP/1.1\r\nHost: \(proxy.host)\r\n")
                let answer = try await connection.read(until: "never")
                #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout"), "\(answer.prefix(200))")
                #expect(answer.contains("proxy.header_timeout (300ms)"))
            }
            #expect(proxy.upstream.connectionCount == 0)
        }
    }

    // The drip (slowloris) and idle cases run on a manual clock (ProxyDeadlineTests), and so do
    // a body that stops, a body that keeps coming and a kept-alive connection's idle time, client
    // to upstream (ExchangeTimingTests), in simulated milliseconds instead of 5 s of sleeping.

    /// A client that asks for a large response and never reads it: the exchange used to hold
    /// its slot and an upstream connection forever.
    @Test func aClientThatStopsReadingIsClosedAtTheSendTimeout() async throws {
        let yaml = "proxy:\n  send_timeout: 300ms\n  max_connections: 1"
        let responder = Responder { $0.head.uri == "/big" ? .stream(bytes: 256 << 20) : .ok() }
        try await ProxyFixture.with(yaml: yaml, responder: responder) { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                try await connection.send("GET /big HTTP/1.1\r\nHost: \(proxy.host)\r\n\r\n")
                try await waitUntil(.seconds(30)) { proxy.logText.contains("proxy.send_timeout") }
            }
            // The slot is free again: with max_connections 1, another client is served.
            let answer = try await proxy.raw("GET /small HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
            #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(100))")
        }
    }

    /// At the limit, waiting clients are counted and warned about (every 30 s), never silent.
    @Test func clientsWaitingAtTheLimitAreCountedAndLogged() async throws {
        try await ProxyFixture.with(yaml: "proxy:\n  max_connections: 1") { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { holder in
                try await holder.send("GET /a HTTP/1.1\r\nHost: \(proxy.host)\r\n\r\n")
                _ = try await holder.read(until: "\r\n\r\nok")
                let waiting = (0..<3).map { _ in LoopbackSocket.silentConnection(to: proxy.port) }
                defer { for descriptor in waiting { close(descriptor) } }
                try await waitUntil(.seconds(10)) {
                    proxy.logText.contains("clients are waiting for a connection slot")
                }
                #expect(proxy.logText.contains("waiting=3"), "\(proxy.logText.suffix(400))")
            }
        }
    }

    /// `proxy.at_connection_limit: refuse`: over the limit a client is answered 503 at once.
    @Test func overTheLimitAClientIsRefusedWith503WhenSoConfigured() async throws {
        let yaml = "proxy:\n  max_connections: 1\n  at_connection_limit: refuse"
        try await ProxyFixture.with(yaml: yaml) { proxy in
            try await RawConnection.with(port: proxy.port, group: proxy.group) { holder in
                try await holder.send("GET /a HTTP/1.1\r\nHost: \(proxy.host)\r\n\r\n")
                _ = try await holder.read(until: "\r\n\r\nok")
                // Answered on accept, without a request: the client only reads (a write could
                // meet the connection already closed).
                let refused = try await RawConnection.with(port: proxy.port, group: proxy.group) { connection in
                    try await connection.read(until: "never")
                }
                #expect(
                    refused.hasPrefix("HTTP/1.1 503 ") && refused.lowercased().contains("retry-after: 1"),
                    "\(refused)"
                )
                #expect(refused.contains("proxy.max_connections"))
            }
            // The holder's close reaches bearerd's loop a moment after the client's: until it
            // does, the slot is taken and the answer is the 503 again (bounded, 2 s). Such a
            // refusal closes on accept, so writing the request can meet the connection closed
            // ("I/O on closed channel"): that is a refusal too.
            var served = ""
            for _ in 0..<100 {
                do {
                    served = try await proxy.raw("GET /c HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
                } catch let error as ChannelError where error == .ioOnClosedChannel {
                    served = "HTTP/1.1 503 (closed before the request was written)"
                }
                if !served.hasPrefix("HTTP/1.1 503 ") { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(served.hasPrefix("HTTP/1.1 200 "), "a freed slot serves again: \(served.prefix(80))")
            #expect(proxy.upstream.requests.map(\.head.uri) == ["/a", "/c"])
        }
    }

    @Test func theLimiterWakesWaitingListenersWhenASlotFreesOrTheLimitRises() {
        let limiter = ConnectionLimiter(limit: 1, metrics: ProxyMetrics(), failures: .testing)
        let listener = ObjectIdentifier(limiter)
        limiter.addListener(listener)
        let woken = NIOLockedValueBox(0)
        #expect(limiter.take(for: listener))
        #expect(!limiter.take(for: listener) { woken.withLockedValue { $0 += 1 } })
        #expect(woken.withLockedValue { $0 } == 0)
        limiter.give(from: listener)
        #expect(woken.withLockedValue { $0 } == 1)
        #expect(limiter.take(for: listener))
        #expect(!limiter.take(for: listener) { woken.withLockedValue { $0 += 1 } })
        limiter.setLimit(2)
        #expect(woken.withLockedValue { $0 } == 2)
        #expect(limiter.take(for: listener))
        #expect(!limiter.take(for: listener))
    }

    /// A TCP caller holding every connection it can must leave the unix socket its share.
    @Test func eachListenerHasItsShareOfTheLimit() {
        let limiter = ConnectionLimiter(limit: 4, metrics: ProxyMetrics(), failures: .testing)
        let tcpListener = ProxyMetrics()
        let tcp = ObjectIdentifier(tcpListener)
        let unix = ObjectIdentifier(limiter)
        limiter.addListener(tcp)
        limiter.addListener(unix)
        #expect(limiter.take(for: tcp) && limiter.take(for: tcp))
        #expect(!limiter.take(for: tcp), "the TCP listener's share is 2 of 4")
        #expect(limiter.take(for: unix) && limiter.take(for: unix))
        #expect(!limiter.take(for: unix))
        limiter.give(from: unix)
        #expect(!limiter.take(for: tcp), "a unix slot freed stays the unix listener's")
        #expect(limiter.take(for: unix))
        limiter.removeListener(unix)
        limiter.give(from: tcp)
        #expect(limiter.take(for: tcp), "one listener left: its share is the whole limit")
        withExtendedLifetime(tcpListener) {}
    }
}
