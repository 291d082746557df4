import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Files that are not regular files, where bearerd expects one: what the daemon's account can
/// put in its own directory to wedge a command root runs.
package enum SpecialFile: String, CaseIterable, Sendable, CustomStringConvertible {
    case fifo = "a FIFO"
    case socket = "a socket"
    case directory = "a directory"
    case characterDevice = "a character device"

    package var description: String { self.rawValue }

    /// Makes one at `path`. A character device needs root (it is `/dev/null`'s numbers).
    package func make(at path: String) throws {
        let made: Bool
        switch self {
        case .fifo:
            made = mkfifo(path, 0o600) == 0
        case .socket:
            let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(descriptor) }
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (offset, byte) in path.utf8.enumerated() { raw[offset] = byte }
            }
            made = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
                }
            }
        case .directory:
            made = mkdir(path, 0o700) == 0
        case .characterDevice:
            // /dev/null: major 1, minor 3 (glibc's makedev is a macro Swift does not import).
            made = mknod(path, S_IFCHR | 0o600, dev_t(1 << 8 | 3)) == 0
        }
        guard made else { throw TestClientError("cannot make \(self) at \(path): \(String(cString: strerror(errno)))") }
    }
}

/// Runs `body` on a thread of its own, so that a call blocked for ever in `open()` on one of
/// `fifos` cannot hang the suite: after `limit`, the FIFOs are opened for writing and closed,
/// which lets such an open return. `jammed` says whether that was needed — a test of "never
/// blocks" expects it false.
package func withoutBlocking<Value: Sendable>(
    on fifos: [String],
    limit: Duration = .seconds(1),
    _ body: @escaping @Sendable () -> Value
) async throws -> (value: Value, jammed: Bool) {
    let result = Outcome<Value>()
    let thread = Thread { result.set(body()) }
    thread.start()
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    var jammed = false
    while true {
        if let value = result.value { return (value, jammed) }
        if clock.now >= deadline {
            jammed = true
            for fifo in fifos {
                let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
                if writer >= 0 { close(writer) }
            }
        }
        guard clock.now < deadline + .seconds(30) else { throw TestClientError("still blocked after unjamming") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// What the thread of ``withoutBlocking(on:limit:_:)`` returned, once it has.
private final class Outcome<Value: Sendable>: Sendable {
    private let state = Mutex<Value?>(nil)
    var value: Value? { self.state.withLock { $0 } }
    func set(_ value: Value) { self.state.withLock { $0 = value } }
}
