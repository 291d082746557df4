import BearerdTestSupport
import Foundation
import Testing

/// The ports handed to servers of other processes (PostgreSQL, the token servers) cannot be taken
/// by this run's own port-0 binds and outgoing connections before those servers bind them.
@Suite("A port for another process's server")
struct FreePortTests {
    @Test func isOutsideTheEphemeralRangeAndNeverHandedOutTwice() throws {
        let text = try String(contentsOfFile: "/proc/sys/net/ipv4/ip_local_port_range", encoding: .utf8)
        let bounds = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        try #require(bounds.count == 2)
        var seen: Set<Int> = []
        for _ in 0..<200 {
            let port = try FreePort.pick()
            #expect(!(bounds[0]...bounds[1]).contains(port), "\(port) is in the ephemeral range \(bounds)")
            #expect(seen.insert(port).inserted, "\(port) handed out twice")
        }
    }
}
