import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The daemons `status --all` finds started by hand: `bearerd serve` processes outside the
/// system units (whose rows the configs in /etc/bearerd give). Only a process of the user
/// running `status` is asked: anyone can start a process called bearerd whose command line names
/// a FIFO for a config or a socket that never answers, and root must not read, trust or wait for
/// it. Another user's is listed, not asked.
extension InstanceStatus {
    /// A `bearerd serve` process, as far as it can be told.
    struct Process {
        var pid: Int32
        /// The owner of the process.
        var owner: uid_t
        var config: String?
        /// The environment it reads its config with (its own, with an instance's or a user
        /// service's directories); `nil` when it cannot be read.
        var environment: [String: String]?
    }

    static func handStartedRows(asked: inout Set<String>) async -> [Row] {
        var rows: [Row] = []
        for process in Self.handStarted() {
            let row = Row(instance: "-", unit: "pid \(process.pid) (by hand)", state: "", expires: "-")
            guard process.owner == geteuid() else {
                rows.append(
                    with(row) {
                        $0.unit = "pid \(process.pid) (by hand, uid \(process.owner))"
                        $0.state = "not asked: another user's (run `bearerd status --all` as that user)"
                    }
                )
                continue
            }
            guard let config = process.config, let environment = process.environment else {
                rows.append(with(row) { $0.state = "not asked: its config cannot be told" })
                continue
            }
            guard Self.isPlainFile(config) else {
                rows.append(with(row) { $0.state = "not asked: its config \(config) is not a regular file" })
                continue
            }
            var (answered, socket) = await Self.row(
                with(row) { $0.unit += " \(config)" },
                config: config,
                environment: environment
            )
            // Its admin socket was asked already (a unit's daemon, started by hand in its place).
            if let socket, asked.contains(socket) { continue }
            if socket == nil, answered.state.hasPrefix("not running") {
                answered.state = "running, but its admin socket does not answer"
            }
            if let socket { asked.insert(socket) }
            rows.append(answered)
        }
        return rows
    }

    /// `bearerd serve` processes on this machine, not those of a system unit.
    static func handStarted() -> [Process] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [Process] = []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                HeldResources.command(pid: pid) == "bearerd",
                let raw = HeldResources.read("/proc/\(entry)/cmdline")
            else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.dropFirst().first == "serve", !Self.isSystemUnit(pid: pid),
                let owner = Self.owner(pid: pid)
            else { continue }
            var environment = HeldResources.environment(pid: pid)
            if let base = environment {
                if let name = Self.option(["--instance", "-i"], in: arguments) {
                    environment = Instance(name: name).environment(base)
                } else if arguments.contains("--user") {
                    environment = UserSession(environment: base).environment(base)
                }
            }
            found.append(
                Process(
                    pid: pid,
                    owner: owner,
                    config: HeldResources.daemonConfig(pid: pid),
                    environment: environment
                )
            )
        }
        return found.sorted { $0.pid < $1.pid }
    }

    /// The process's real and effective uid when they agree (/proc/PID/status), else `nil`:
    /// not the owner of /proc/PID, which is root for any process that made itself not dumpable
    /// (as bearerd does, and as a process pretending to be bearerd can).
    static func owner(pid: Int32) -> uid_t? {
        guard let status = HeldResources.readText("/proc/\(pid)/status"),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Uid:") })
        else { return nil }
        let ids = line.dropFirst(4).split(whereSeparator: { $0 == " " || $0 == "\t" }).compactMap { uid_t($0) }
        guard ids.count >= 2, ids[0] == ids[1] else { return nil }
        return ids[1]
    }

    /// The value of an option given as `--name VALUE` or `--name=VALUE`.
    static func option(_ names: [String], in arguments: [String]) -> String? {
        for (index, argument) in arguments.enumerated() {
            for name in names {
                if argument == name, index + 1 < arguments.count { return arguments[index + 1] }
                if argument.hasPrefix(name + "=") { return String(argument.dropFirst(name.count + 1)) }
            }
        }
        return nil
    }

    /// Whether the process runs in a system unit of bearerd's (its cgroup), whose row the
    /// config in /etc/bearerd gives.
    static func isSystemUnit(pid: Int32) -> Bool {
        guard let cgroup = HeldResources.readText("/proc/\(pid)/cgroup") else { return false }
        return cgroup.contains("/system.slice/bearerd.service")
            || cgroup.contains("/system.slice/system-bearerd.slice/")
    }

    /// A regular file of at most 1 MiB: never a FIFO or a device a read would wait on.
    static func isPlainFile(_ path: String) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = attributes[.size] as? NSNumber
        else { return false }
        return size.intValue <= 1 << 20
    }
}
