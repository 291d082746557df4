import BearerdConfig
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension HeldResources {
    // MARK: - The store's lock

    /// The pid holding a `flock` on `file`, from /proc/locks (no lock is taken to find out).
    static func lockHolder(of file: String) -> Int32? {
        var info = stat()
        guard stat(file, &info) == 0, let table = Self.readText("/proc/locks") else {
            return nil
        }
        let inode = "\(info.st_ino)"
        for line in table.split(separator: "\n") {
            // "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[3] == "WRITE" else { continue }
            let device = fields[5].split(separator: ":")
            guard device.count == 3, device[2] == inode, Self.sameDevice(device, info.st_dev) else { continue }
            return Int32(fields[4])
        }
        return nil
    }

    private static func sameDevice(_ fields: [Substring], _ device: dev_t) -> Bool {
        guard let major = UInt64(fields[0], radix: 16), let minor = UInt64(fields[1], radix: 16) else { return false }
        let deviceMajor = (UInt64(device) >> 8) & 0xFFF | ((UInt64(device) >> 32) & ~0xFFF)
        let deviceMinor = UInt64(device) & 0xFF | ((UInt64(device) >> 12) & ~0xFF)
        return major == deviceMajor && minor == deviceMinor
    }

    // MARK: - TCP ports

    /// Whether binding `host:port` now fails with EADDRINUSE (as `serve`'s bind would, with
    /// `SO_REUSEADDR` as NIO sets it). A host that is not a literal address is not probed.
    static func isInUse(host: String, port: Int) -> Bool {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        if inet_pton(AF_INET, host, &storage) == 1 {
            family = AF_INET
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET, host, &address.sin_addr)
            withUnsafeBytes(of: address) { raw in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if inet_pton(AF_INET6, host, &storage) == 1 {
            family = AF_INET6
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            _ = inet_pton(AF_INET6, host, &address.sin6_addr)
            withUnsafeBytes(of: address) { raw in
                withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: raw) }
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            return false
        }
        let descriptor = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = withUnsafePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        return bound != 0 && errno == EADDRINUSE
    }

    /// The pids (that this user may see) holding a socket listening on `port`.
    static func listeners(port: Int) -> [Int32] {
        var inodes = Set<String>()
        let hex = String(format: "%04X", port)
        for table in ["/proc/net/tcp", "/proc/net/tcp6"] {
            guard let text = Self.readText(table) else { continue }
            for line in text.split(separator: "\n").dropFirst() {
                // "sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode"
                let fields = line.split(separator: " ", omittingEmptySubsequences: true)
                guard fields.count >= 10, fields[3] == "0A", fields[1].hasSuffix(":" + hex) else { continue }
                inodes.insert("socket:[\(fields[9])]")
            }
        }
        guard !inodes.isEmpty, let processes = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else {
            return []
        }
        var holders: [Int32] = []
        for entry in processes {
            guard let pid = Int32(entry),
                let descriptors = try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(entry)/fd")
            else { continue }
            for descriptor in descriptors {
                if let target = try? FileManager.default.destinationOfSymbolicLink(
                    atPath: "/proc/\(entry)/fd/\(descriptor)"
                ),
                    inodes.contains(target)
                {
                    holders.append(pid)
                    break
                }
            }
        }
        return holders.sorted()
    }

    /// A process's name (`comm`), printable characters only.
    static func command(pid: Int32) -> String? {
        guard let text = Self.readText("/proc/\(pid)/comm") else { return nil }
        let name = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !name.isEmpty else { return nil }
        return String(name.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
    }

    /// A file of /proc whole. Its size says 0, and Foundation's `String(contentsOfFile:)` then
    /// reads one page: /proc/net/tcp on a busy machine is far longer, and the line sought
    /// was not in the first 4 KiB. Read to its end here, at most 64 MiB.
    static func read(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while bytes.count < 64 << 20 {
            let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return count == 0 ? bytes : nil }
            bytes += buffer[0..<count]
        }
        return bytes
    }

    static func readText(_ path: String) -> String? {
        Self.read(path).map { String(decoding: $0, as: UTF8.self) }
    }
}
