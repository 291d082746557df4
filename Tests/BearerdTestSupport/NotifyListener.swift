import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// A fake systemd notification socket: a unix datagram socket that records what bearerd sends
/// to `$NOTIFY_SOCKET`.
package final class NotifyListener: Sendable {
    package let path: String
    private let box = Box()

    final class Box: Sendable {
        let messages = Mutex<[String]>([])
        let open = Atomic<Bool>(true)
    }

    package init(directory: String) throws {
        self.path = directory + "/notify.sock"
        let descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestClientError("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in self.path.utf8.enumerated() { raw[offset] = byte }
        }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard bound == 0 else { throw TestClientError("bind \(self.path): \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let box = self.box
        // The reader owns the descriptor and closes it once the listener is gone.
        Thread {
            var buffer = [UInt8](repeating: 0, count: 4096)
            while box.open.load(ordering: .relaxed) {
                let count = recv(descriptor, &buffer, buffer.count, 0)
                if count > 0 { box.messages.withLock { $0.append(String(decoding: buffer[..<count], as: UTF8.self)) } }
            }
            close(descriptor)
        }.start()
    }

    deinit {
        self.box.open.store(false, ordering: .relaxed)
        unlink(self.path)
    }

    /// Every message so far, in order.
    package var messages: [String] { self.box.messages.withLock { $0 } }
}
