import BearerdConfig
import BearerdSockets
import Foundation

#if canImport(Glibc)
import Glibc
#endif

extension HeldResources {
    // MARK: - The daemon on the admin socket

    static func daemon(at socket: String) -> Daemon? {
        let descriptor = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard socket.utf8.count < capacity else { return nil }
        UnixSocketFile.boundConnect(descriptor)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (offset, byte) in socket.utf8.enumerated() { raw[offset] = byte }
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0
            }
        }
        guard connected else { return nil }
        // struct ucred (pid, uid, gid), which Glibc's module declares only under _GNU_SOURCE.
        var credentials: [Int32] = [0, 0, 0]
        var length = socklen_t(MemoryLayout<Int32>.size * 3)
        guard getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0, credentials[0] > 0 else {
            return nil
        }
        return Daemon(pid: credentials[0], configPath: Self.daemonConfig(pid: credentials[0]))
    }

    /// The config a `bearerd serve` process reads, from its command line (and its environment's
    /// `BEARERD_CONFIG`, when this user may read it); `nil` when it cannot be told.
    static func daemonConfig(pid: Int32) -> String? {
        guard let raw = Self.read("/proc/\(pid)/cmdline") else { return nil }
        let arguments = raw.split(separator: 0, omittingEmptySubsequences: false).map {
            String(decoding: $0, as: UTF8.self)
        }
        guard let path = Self.configPath(arguments: arguments, environment: Self.environment(pid: pid)) else {
            return nil
        }
        if path.hasPrefix("/") { return path }
        // Relative to the daemon's folder, which only its user (or root) may read.
        guard let folder = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/cwd") else {
            return nil
        }
        return folder + "/" + path
    }

    /// `--config PATH` (`-c`, `--config=`), `--instance NAME` (`-i`), `--user`, else
    /// `BEARERD_CONFIG`, else the default; `nil` when it depends on what cannot be read.
    static func configPath(arguments: [String], environment: [String: String]?) -> String? {
        var index = 1
        while index < arguments.count {
            let argument = arguments[index]
            let next = index + 1 < arguments.count ? arguments[index + 1] : nil
            switch argument {
            case "-c", "--config": return next
            case "-i", "--instance": return next.map { Instance(name: $0).configPath }
            case "--user":
                return environment.map { UserSession(environment: $0).configPath }
            default:
                if argument.hasPrefix("--config=") { return String(argument.dropFirst("--config=".count)) }
                if argument.hasPrefix("--instance=") {
                    return Instance(name: String(argument.dropFirst("--instance=".count))).configPath
                }
            }
            index += 1
        }
        guard let environment else { return nil }
        return environment["BEARERD_CONFIG"] ?? ConfigLoader.defaultPath
    }

    static func environment(pid: Int32) -> [String: String]? {
        guard let raw = Self.read("/proc/\(pid)/environ") else { return nil }
        var environment: [String: String] = [:]
        for entry in raw.split(separator: 0) {
            let text = String(decoding: entry, as: UTF8.self)
            guard let equals = text.firstIndex(of: "=") else { continue }
            environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
        }
        return environment
    }

    static func samePath(_ one: String, _ other: String) -> Bool {
        Self.realPath(one) == Self.realPath(other)
    }

    private static func realPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
