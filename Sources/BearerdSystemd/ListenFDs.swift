#if canImport(Glibc)
import Glibc
#endif

/// Sockets systemd passed at start (`sd_listen_fds(3)`): descriptors 3 … 3+LISTEN_FDS-1 when
/// `LISTEN_PID` is this process, named by `LISTEN_FDNAMES`.
package struct ListenFDs: Sendable, Equatable {
    package struct Passed: Sendable, Equatable {
        package var descriptor: Int32
        /// `FileDescriptorName=` of the socket unit, or "unknown".
        package var name: String
    }

    package var sockets: [Passed]

    /// The first passed descriptor (`SD_LISTEN_FDS_START`).
    package static let start: Int32 = 3

    /// Reads the variables; `nil` when nothing was passed to this process. The descriptors are
    /// marked close-on-exec, as `sd_listen_fds` does.
    package init?(environment: [String: String], processID: Int32) {
        guard let pid = environment["LISTEN_PID"].flatMap(Int32.init), pid == processID,
            let count = environment["LISTEN_FDS"].flatMap(Int32.init), count > 0, count < 1024
        else { return nil }
        let names = environment["LISTEN_FDNAMES"]?.split(separator: ":", omittingEmptySubsequences: false).map(
            String.init
        )
        self.sockets = (0..<count).map { index in
            let descriptor = Self.start + index
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            let name = names.flatMap { Int(index) < $0.count ? $0[Int(index)] : nil } ?? "unknown"
            return Passed(descriptor: descriptor, name: name)
        }
    }

    /// Whether `descriptor` is a listening stream socket (what `serve` can accept on).
    package static func isListeningStream(_ descriptor: Int32) -> Bool {
        var type: Int32 = 0
        var listening: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { return false }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(descriptor, SOL_SOCKET, SO_ACCEPTCONN, &listening, &length) == 0 else { return false }
        return type == Int32(SOCK_STREAM.rawValue) && listening != 0
    }
}
