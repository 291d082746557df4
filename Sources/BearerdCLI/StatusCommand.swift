import ArgumentParser
import BearerdAdmin
import BearerdTokens
import Foundation
import NIOHTTP1

/// `bearerd status`: the session's state; never a token.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the session: state, subject, expiry, refreshes. Never a token.",
        discussion: """
            Asks the running daemon over admin.socket; with no daemon, reads the store. Exits 0 \
            when a token can be had, 3 when logged out, 4 while the token server fails and no \
            valid token is left (requests get 503), 1 on an error. With --all, one line for \
            each config in /etc/bearerd (bearerd.yaml and each instance's NAME.yaml), then one for \
            each daemon started by hand (a `bearerd serve` process on another admin socket), each \
            asked over its admin socket, and exits 0.
            """
    )

    @OptionGroup var options: ConfigOption
    @OptionGroup var session: SessionOption
    @Flag(help: "Print JSON (RFC 3339 times).") var json = false
    @Flag(
        help:
            "One line for each bearerd on this machine: bearerd.service, each bearerd@NAME (/etc/bearerd/NAME.yaml), and each started by hand."
    )
    var all = false
    @Option(help: "Root only, a per_caller session: this user's tokens instead of your own.") var uid: UInt32?
    @Flag(help: "Root only, a per_caller session: one line for each user with tokens here.") var users = false

    func validate() throws {
        if self.all && (self.options.config != nil || self.options.instance != nil || self.json) {
            throw ValidationError("--all lists every instance: leave out --config, --instance and --json")
        }
    }

    func run() async throws {
        if self.all {
            print(InstanceStatus.render(await InstanceStatus.rows()), terminator: "")
            return
        }
        if self.session.session == nil,
            case .success(let all) = Startup.prepareSessions(
                configPath: self.options.path,
                logger: SessionAccess.quietLogger,
                environment: self.options.environment
            ), all.count > 1
        {
            try await self.list(all.map(\.session))
            return
        }
        if self.users {
            try await SessionCommand.run(self.options, session: self.session.session) { channel in
                let list = try await channel.request(.GET, "/v1/callers", as: AdminMessages.Callers.self)
                if self.json {
                    print(String(decoding: try TokenStatus.encoder().encode(list), as: UTF8.self))
                } else {
                    print(Self.render(list), terminator: "")
                }
            }
            return
        }
        try await SessionCommand.run(self.options, session: self.session.session) { channel in
            let path = "/v1/status" + (self.uid.map { "?uid=\($0)" } ?? "")
            var status = try await channel.request(.GET, path, as: TokenStatus.self)
            status.daemon = channel.daemon
            if self.json {
                print(String(decoding: try TokenStatus.encoder().encode(status), as: UTF8.self))
            } else {
                print(StatusText.render(status), terminator: "")
            }
            if status.state == .loggedOut { throw ExitCode(3) }
            // Monitoring reads the exit code: no token to send is a failure, not a state.
            if status.state == .waiting && status.tokenUsable == false { throw ExitCode(4) }
        }
    }
}

extension StatusCommand {
    /// `--users`: a line per user of a per_caller session.
    static func render(_ list: AdminMessages.Callers) -> String {
        guard !list.callers.isEmpty else { return "no user has tokens in this session\n" }
        return list.callers.map { entry in
            guard let status = entry.status else { return "uid \(entry.uid): stored (not in memory)\n" }
            var parts = [status.state.text]
            if let subject = status.subject { parts.append("as \(PrintableText.of(subject))") }
            if let expiresAt = status.expiresAt {
                parts.append("token valid for \(StatusText.span(max(0, Int(expiresAt.timeIntervalSince(status.now)))))")
            }
            return "uid \(entry.uid): " + parts.joined(separator: ", ") + "\n"
        }.joined()
    }

    /// Every session of a config with several: a block each (a JSON object by name with
    /// --json). Exits 0 when each has a token to send, else as the worst of them would alone.
    func list(_ names: [String]) async throws {
        var statuses: [(String, TokenStatus)] = []
        for name in names {
            try await SessionCommand.run(self.options, session: name) { channel in
                var status = try await channel.request(.GET, "/v1/status", as: TokenStatus.self)
                status.daemon = channel.daemon
                statuses.append((name, status))
            }
        }
        if self.json {
            let encoder = TokenStatus.encoder()
            let entries = try statuses.map { name, status in
                "\"\(name)\":" + String(decoding: try encoder.encode(status), as: UTF8.self)
            }
            print("{\"sessions\":{" + entries.joined(separator: ",") + "}}")
        } else {
            print(
                statuses.map { name, status in "session \(name)\n" + StatusText.render(status) }.joined(
                    separator: "\n"
                ),
                terminator: ""
            )
        }
        if statuses.contains(where: { $0.1.state == .loggedOut }) { throw ExitCode(3) }
        if statuses.contains(where: { $0.1.state == .waiting && $0.1.tokenUsable == false }) { throw ExitCode(4) }
    }
}

/// `status` for a person: one fact per line, times with how far away they are.
enum StatusText {
    static func render(_ status: TokenStatus) -> String {
        var lines: [(String, String)] = []
        if let daemon = status.daemon { lines.append(("daemon", daemon)) }
        lines.append(("state", status.state.text))
        if let detail = status.detail { lines.append(("detail", detail)) }
        if let session = status.session { lines.append(("session", session)) }
        if let subject = status.subject { lines.append(("subject", subject)) }
        if let scope = status.scope { lines.append(("scope", scope)) }
        if let expiresAt = status.expiresAt { lines.append(("token expires", Self.time(expiresAt, now: status.now))) }
        if let next = status.nextRefreshAt { lines.append(("next refresh", Self.time(next, now: status.now))) }
        if let last = status.lastRefreshAt {
            let result = [status.lastRefreshResult, status.lastRefreshGrant.map { "(\($0))" }].compactMap { $0 }
            lines.append(("last refresh", Self.time(last, now: status.now) + ", " + result.joined(separator: " ")))
        }
        if let grant = status.clientGrant {
            var text = grant.source.replacingOccurrences(of: "_", with: " ")
            if let file = grant.subjectTokenFile { text += " of \(file)" }
            if let program = grant.command { text += " \(program)" }
            lines.append(("client token", text))
            if let ran = grant.commandRanAt, let ended = grant.commandEnded {
                lines.append(("last command", Self.time(ran, now: status.now) + ", " + ended))
                if let said = grant.commandStderr { lines.append(("command said", said)) }
            }
            if let expiresAt = grant.subjectTokenExpiresAt {
                let who = grant.subjectTokenSubject.map { " (sub \($0))" } ?? ""
                lines.append(("subject expires", Self.time(expiresAt, now: status.now) + who))
            }
        }
        if let found = status.discovered {
            var text =
                "from \(found.resource) (RFC 9728): "
                + (found.issuer.map { "authorization server \($0)" } ?? "not asked yet (at `bearerd login`)")
            if let client = found.clientID {
                text += found.registered ? ", client \(client) registered by bearerd (RFC 7591)" : ", client \(client)"
            }
            lines.append(("discovered", text))
        }
        if let asks = status.apiAsks {
            var what = [asks.scope.map { "scope \($0)" }, asks.acrValues.map { "acr_values \($0)" }]
                .compactMap { $0 }
            if let maxAge = asks.maxAge { what.append("max_age \(maxAge)") }
            lines.append(
                (
                    "api asks",
                    "\(what.joined(separator: ", ")) (\(asks.error) on \(asks.path), \(Self.time(asks.at, now: status.now))): \(asks.action)"
                )
            )
        }
        lines.append(("failures", "\(status.failuresInARow) in a row"))
        if status.storeBehind {
            lines.append(("store", "the last change is not on disk yet; bearerd retries the write"))
        }
        if let fleet = status.fleet {
            var text = "postgres, row version \(fleet.version.map(String.init) ?? "not read yet")"
            if let host = fleet.writtenBy { text += ", written by \(host)" }
            text += fleet.problem.map { "; unavailable: \($0)" } ?? "; reachable"
            if fleet.behind { text += "; tokens issued here are not in the row yet (retrying)" }
            lines.append(("fleet", text))
        }
        let width = (lines.map(\.0.count).max() ?? 0) + 2
        return lines.map { name, value in
            (name + ":").padding(toLength: width, withPad: " ", startingAt: 0) + PrintableText.of(value) + "\n"
        }.joined()
    }

    /// `2026-11-22T09:00:00Z (in 4m 10s)` or `(… ago)`.
    static func time(_ date: Date, now: Date) -> String {
        let formatter = ISO8601DateFormatter()
        let raw = date.timeIntervalSince(now)
        let seconds = raw.isFinite ? Int(min(max(raw, -1e12), 1e12).rounded()) : 0
        let span = Self.span(abs(seconds))
        if seconds == 0 { return formatter.string(from: date) + (date <= now ? " (just now)" : " (now)") }
        return formatter.string(from: date) + (seconds > 0 ? " (in \(span))" : " (\(span) ago)")
    }

    static func span(_ seconds: Int) -> String {
        switch seconds {
        case ..<60: "\(seconds)s"
        case ..<3600: "\(seconds / 60)m \(seconds % 60)s"
        case ..<86400: "\(seconds / 3600)h \(seconds % 3600 / 60)m"
        default: "\(seconds / 86400)d \(seconds % 86400 / 3600)h"
        }
    }
}
