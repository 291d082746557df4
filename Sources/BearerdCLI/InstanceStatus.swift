import BearerdAdmin
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
        rows += await Self.handStartedRows(asked: &asked)
        return rows
    }

    static func with(_ row: Row, _ change: (inout Row) -> Void) -> Row {
        var row = row
        change(&row)
        return row
    }

    /// `row` with the answer of the daemon serving `config`, and the admin socket it asked.
    static func row(_ row: Row, config: String, environment: [String: String]) async -> (Row, String?) {
        var row = row
        // Only the admin socket is needed: no secret file is read for a listing.
        let loader = ConfigLoader(environment: environment)
        guard let sessions = try? loader.loadSessions(path: config) else {
            row.state = "config has problems (bearerd check-config --config \(config))"
            return (row, nil)
        }
        let configuration = sessions.daemon
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
        let answer: Result<[(String, TokenStatus)], any Error>
        do {
            if sessions.isNamed {
                let all = try await channel.request(.GET, "/v1/sessions", as: AdminMessages.Sessions.self)
                answer = .success(all.sessions.map { ($0.name, $0.status) })
            } else {
                answer = .success([("", try await channel.request(.GET, "/v1/status", as: TokenStatus.self))])
            }
        } catch {
            answer = .failure(error)
        }
        await channel.close()
        switch answer {
        case .success(let statuses):
            // One session: its state; several: each one's, by name, and the earliest expiry.
            row.state = statuses.map { name, status in (name.isEmpty ? "" : name + " ") + status.state.text }
                .joined(separator: ", ")
            let expiries = statuses.compactMap { _, status in
                status.expiresAt.map { max(0, Int($0.timeIntervalSince(status.now).rounded())) }
            }
            if let soonest = expiries.min() { row.expires = "in " + StatusText.span(soonest) }
        case .failure(let error):
            row.state = "no answer: " + PrintableText.of("\(error)")
        }
        return (row, socket)
    }

    /// The rows as an aligned table with a header; every cell printable only (a config path or
    /// a state may come from a process another user started).
    static func render(_ rows: [Row]) -> String {
        let table = ([Row(instance: "INSTANCE", unit: "UNIT", state: "STATE", expires: "TOKEN EXPIRES")] + rows).map {
            Row(
                instance: PrintableText.of($0.instance),
                unit: PrintableText.of($0.unit),
                state: PrintableText.of($0.state),
                expires: PrintableText.of($0.expires)
            )
        }
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
