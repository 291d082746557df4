import BearerdProxy
import BearerdWire
import Foundation
import Logging

extension BearerdConfiguration {
    /// `admin.*` and `metrics.listen`
    package struct Admin: Sendable {
        /// `admin.socket`, resolved: the unix socket `login`, `logout`, `status` and `token` use.
        package var socket: String
        /// `metrics.listen`: a TCP address for `/metrics`, `/health` and `/ready` (none by
        /// default; the admin socket serves them too).
        package var metricsListen: ListenAddress?

        /// `admin.socket`: by default in systemd's `RuntimeDirectory=`, else /run/bearerd; a relative
        /// path is taken from there too.
        init(reading builder: inout ConfigBuilder) {
            typealias Keys = ConfigKeys.Admin
            let runtimeDirectory = builder.environment["RUNTIME_DIRECTORY"].flatMap { $0.isEmpty ? nil : $0 }
            let base = runtimeDirectory ?? "/run/bearerd"
            var socket = base + "/admin.sock"
            if let raw = builder.string(Keys.socket) {
                socket = raw.hasPrefix("/") ? raw : (runtimeDirectory ?? builder.baseDirectory) + "/" + raw
            }
            if socket.utf8.count > ListenAddress.maxUnixPathLength {
                builder.issue(
                    Keys.socket.name,
                    "\(socket) is longer than a unix socket path may be (\(ListenAddress.maxUnixPathLength) bytes, got \(socket.utf8.count)); choose a shorter path"
                )
            }
            var metrics: ListenAddress?
            if let text = builder.string(Keys.metricsListen) {
                switch ListenAddress.parse(text) {
                case .refused(let reason):
                    builder.issue(Keys.metricsListen.name, reason)
                case .parsed(.unix):
                    builder.issue(
                        Keys.metricsListen.name,
                        "must be a TCP address like 127.0.0.1:9464 (the admin socket serves /metrics too)"
                    )
                case .parsed(let address):
                    if !address.isLoopback && !builder.bool(ConfigKeys.General.allowRemote) {
                        builder.issue(
                            Keys.metricsListen.name,
                            "\(address) is not a loopback address; set allow_remote: true if metrics may be read from elsewhere"
                        )
                    }
                    metrics = address
                }
            }
            self.socket = socket
            self.metricsListen = metrics
        }
    }

    /// `log.*`
    package struct Log: Sendable {
        /// `log.level`.
        package var level: Logger.Level
        /// `log.access`: one line per request.
        package var access: Bool
        /// `log.access_query`: include the query string in access lines.
        package var accessQuery: Bool
        /// `log.access_file`, resolved: the file access lines go to; `nil`: standard error (the
        /// journal under systemd).
        package var accessFile: String?

        init(reading builder: inout ConfigBuilder) {
            typealias Keys = ConfigKeys.Admin
            // The fallback is never taken: choice() falls back to the declared default itself.
            self.level = builder.choice(Keys.logLevel).flatMap(Logger.Level.init(rawValue:)) ?? .info
            self.access = builder.bool(Keys.logAccess)
            self.accessQuery = builder.bool(Keys.logAccessQuery)
            // systemd's LogsDirectory= (the packaged units set it): the first directory it names.
            let logsDirectory = builder.environment["LOGS_DIRECTORY"]?.split(separator: ":").first.map(String.init)
            switch builder.string(Keys.logAccessFile) {
            case "stderr": self.accessFile = nil
            case let raw?:
                self.accessFile = raw.hasPrefix("/") ? raw : (logsDirectory ?? builder.baseDirectory) + "/" + raw
            case nil: self.accessFile = logsDirectory.map { $0 + "/access.log" }
            }
        }
    }
}

extension ConfigKeys {
    /// `admin.*`, `metrics.*` and `log.*`: how the daemon is run and watched.
    package enum Admin {
        static let socket = ConfigKeyDescriptor.text(
            "admin.socket",
            "a unix socket path",
            reload: .restart,
            sample: .set("/run/bearerd/admin.sock"),
            doc: """
                The admin socket: `bearerd login`, `logout`, `status` and `token` go through it to the running
                daemon, so one process alone ever uses the refresh token (with no daemon running they use
                the store directly, under its lock). Mode 0600, and each caller's uid is checked: only the
                daemon's user and root may use it. Default: $RUNTIME_DIRECTORY/admin.sock under systemd
                (RuntimeDirectory=bearerd), otherwise /run/bearerd/admin.sock (the directory is created,
                mode 0700, when missing).
                """
        )
        static let metricsListen = ConfigKeyDescriptor.text(
            "metrics.listen",
            "a loopback TCP address",
            reload: .restart,
            sample: .commented("127.0.0.1:9464"),
            doc: """
                A loopback TCP address for Prometheus: GET /metrics (requests by status class, upstream
                latency histogram, requests in flight, body bytes each way, retries after 401, token refreshes
                by result, seconds to token expiry), /health (state, time to expiry, last refresh result) and
                /ready (200 while a valid token is in hand, else 503). Nothing else is served there. The admin
                socket serves the same three; the proxy port never does (its paths belong to the upstream).
                None by default.
                """
        )
        static let logLevel = ConfigKeyDescriptor(
            "log.level",
            .choice(Logger.Level.allCases.map(\.rawValue)),
            default: Logger.Level.info.rawValue,
            reload: .applies,
            doc: """
                trace, debug, info, notice, warning, error or critical. Logs go to standard error as one
                logfmt line per event (journald-friendly: under systemd each line carries its priority).
                No token, Authorization header or secret is ever logged.
                """
        )
        static let logAccess = ConfigKeyDescriptor.bool(
            "log.access",
            default: true,
            reload: .applies,
            doc: "One line per request: method, path, status, body bytes each way, duration, upstream time."
        )
        static let logAccessQuery = ConfigKeyDescriptor.bool(
            "log.access_query",
            default: false,
            reload: .applies,
            doc: "Include the query string in access lines. Off by default: queries often carry secrets."
        )
        static let logAccessFile = ConfigKeyDescriptor.text(
            "log.access_file",
            "a file name, or stderr",
            reload: .restart,
            sample: .commented("/var/log/bearerd/access.log"),
            doc: """
                Where access lines go: a file, appended to and opened again at every reload (so logrotate
                can move it: the package's /etc/logrotate.d/bearerd does), or `stderr`. They are written in
                batches, at most a second late, by a thread of their own; when the destination does not
                keep up, lines past 1 MiB waiting are dropped and a line says how many. Default:
                $LOGS_DIRECTORY/access.log under systemd (LogsDirectory=bearerd in the units: at request
                rates the journal's rate limit, 10,000 lines in 30 s, would drop bearerd's own warnings with
                them), otherwise standard error. A relative name is in $LOGS_DIRECTORY under systemd,
                otherwise next to this file.
                """
        )

        static let sections = [
            ConfigSection("admin", [.key(socket)]),
            ConfigSection("metrics", [.key(metricsListen)]),
            ConfigSection("log", [.key(logLevel), .key(logAccess), .key(logAccessQuery), .key(logAccessFile)]),
        ]
    }
}
