import BearerdConfig
import BearerdFiles
import BearerdProxy
import BearerdSockets
import BearerdTokens
import Foundation
import NIOHTTP1

/// `bearerd status --all`: one line per bearerd on this machine: each unit's (the configs in
/// /etc/bearerd), then each daemon started by hand (a `bearerd serve` process serving another
/// admin socket), each asked over its own admin socket. Never a token; a stopped or broken one
/// says so.
enum InstanceStatus {
    struct Row: Equatable {
        var instance: String
        var unit: String
        var state: String
        var expires: String
    }

    static func rows(in directory: String = Instance.directory, now: Date = Date()) async -> [Row] {
        var rows: [Row] = []
        var asked: Set<String> = []
        for instance in Instance.all(in: directory) {
            let environment = instance.environment(ProcessInfo.processInfo.environment)
            let row = Row(instance: instance.name ?? "-", unit: instance.unit, state: "", expires: "-")
            let (answered, socket) = await Self.row(row, config: instance.configPath, environment: environment)
            if let socket { asked.insert(socket) }
            rows.append(answered)
        }
        for process in Self.handStarted() {
            let row = Row(instance: "-", unit: "pid \(process.pid) (by hand)", state: "", expires: "-")
            guard let config = process.config else {
                rows.append(
                    with(row) {
                        $0.state = "not asked: its config cannot be told as this user (run as its user or root)"
                    }
                )
                continue
            }
            var (answered, socket) = await Self.row(
                with(row) { $0.unit += " \(config)" },
                config: config,
                environment: process.environment
            )
            // Its admin socket was asked already: a unit's daemon.
            if let socket, asked.contains(socket) { continue }
            if socket == nil, answered.state.hasPrefix("not running") {
                answered.state = "running, but its admin socket cannot be told (its environment places it)"
            }
            if let socket { asked.insert(socket) }
            rows.append(answered)
        }
        return rows
    }

    /// A `bearerd serve` process: its pid, the config it reads and the environment it reads it
    /// with, as far as they can be told.
    struct Process {
        var pid: Int32
        var config: String?
        var environment: [String: String]
    }

    /// `bearerd serve` processes on this machine.
    static func handStarted() -> [Process] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        var found: [Process] = []
        for entry in entries {
            guard let pid = Int32(entry), pid != getpid(),
                HeldResources.command(pid: pid) == "bearerd",
                let raw = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline")
            else { continue }
            let arguments = raw.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.dropFirst().first == "serve" else { continue }
            var environment = ProcessInfo.processInfo.environment
            if let index = arguments.firstIndex(where: { $0 == "--instance" || $0 == "-i" }),
                index + 1 < arguments.count
            {
                environment = Instance(name: arguments[index + 1]).environment(environment)
            }
            found.append(Process(pid: pid, config: HeldResources.daemonConfig(pid: pid), environment: environment))
        }
        return found.sorted { $0.pid < $1.pid }
    }

    private static func with(_ row: Row, _ change: (inout Row) -> Void) -> Row {
        var row = row
        change(&row)
        return row
    }

    /// `row` with the answer of the daemon serving `config`, and the admin socket it asked.
    static func row(_ row: Row, config: String, environment: [String: String]) async -> (Row, String?) {
        var row = row
        // Only the admin socket is needed: no secret file is read for a listing.
        let loader = ConfigLoader(environment: environment)
        guard let configuration = try? loader.load(path: config) else {
            row.state = "config has problems (bearerd check-config --config \(config))"
            return (row, nil)
        }
        let socket = configuration.admin.socket
        let trust = SocketTrust(storePath: configuration.store.path)
        if let problem = trust.problem(socket) {
            row.state = "not asked: \(problem)"
            return (row, socket)
        }
        guard UnixSocketFile.connectError(socket) == 0 else {
            row.state = "not running (no daemon on \(socket))"
            return (row, nil)
        }
        let channel = SocketAdminChannel(socket: socket, trust: trust)
        let answer: Result<TokenStatus, any Error>
        do {
            answer = .success(try await channel.request(.GET, "/v1/status", as: TokenStatus.self))
        } catch {
            answer = .failure(error)
        }
        await channel.close()
        switch answer {
        case .success(let status):
            row.state = status.state.text
            if let expiresAt = status.expiresAt {
                row.expires = "in " + StatusText.span(max(0, Int(expiresAt.timeIntervalSince(status.now).rounded())))
            }
        case .failure(let error):
            row.state = "no answer: " + PrintableText.of("\(error)")
        }
        return (row, socket)
    }

    /// The rows as an aligned table with a header.
    static func render(_ rows: [Row]) -> String {
        let table = [Row(instance: "INSTANCE", unit: "UNIT", state: "STATE", expires: "TOKEN EXPIRES")] + rows
        let widths = [
            table.map(\.instance.count).max() ?? 0,
            table.map(\.unit.count).max() ?? 0,
            table.map(\.expires.count).max() ?? 0,
        ]
        return table.map { row in
            [
                row.instance.padding(toLength: widths[0], withPad: " ", startingAt: 0),
                row.unit.padding(toLength: widths[1], withPad: " ", startingAt: 0),
                row.expires.padding(toLength: widths[2], withPad: " ", startingAt: 0),
                row.state,
            ].joined(separator: "  ") + "\n"
        }.joined()
    }
}
