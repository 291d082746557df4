import Foundation
import Synchronization

/// A free port on 127.0.0.1 for a server that another process (PostgreSQL, the identity provider,
/// a bearerd under test) binds later, picked outside the kernel's ephemeral range
/// (`net.ipv4.ip_local_port_range`).
///
/// A port the kernel handed out for port 0 and that was closed again can be taken by any outgoing
/// connection before the server binds it: a fleet test's PostgreSQL lost its port that way while
/// the other tests opened hundreds of connections. Outside the ephemeral range only an explicit
/// bind can take it, and this process never hands the same port out twice.
package enum FreePort {
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port nothing is bound to now, never returned before by this process.
    package static func pick() throws -> Int {
        // Every port outside the ephemeral range as likely as another.
        let ports = self.candidateRanges().flatMap { Array($0) }
        for _ in 0..<5000 {
            let port = ports.randomElement()!
            let fresh = self.handedOut.withLock { $0.insert(port).inserted }
            if fresh, LoopbackSocket.canBind(port: port) { return port }
        }
        throw TestClientError("no free port on 127.0.0.1 outside the ephemeral range")
    }

    /// Starts a server of another process on a port from ``pick()``, and on another one when
    /// something bound that port first (the server's error says "in use"); at most three times.
    package static func serve<Server>(_ start: (Int) async throws -> Server) async throws -> Server {
        var attempt = 1
        while true {
            do {
                return try await start(try self.pick())
            } catch let error where attempt < 3 && "\(error)".contains("in use") {
                attempt += 1
            }
        }
    }

    /// The ports below and above the ephemeral range, each at least 1000 wide.
    static func candidateRanges() -> [ClosedRange<Int>] {
        var (low, high) = (32768, 60999)
        if let text = try? String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8) {
            let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
            if numbers.count == 2 { (low, high) = (numbers[0], numbers[1]) }
        }
        var ranges: [ClosedRange<Int>] = []
        if low - 1 >= 11000 { ranges.append(10000...(low - 1)) }
        if high + 1 <= 64535 { ranges.append((high + 1)...65535) }
        return ranges.isEmpty ? [1024...65535] : ranges
    }
}
