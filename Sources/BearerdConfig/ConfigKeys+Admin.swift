import Logging

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

        static let sections = [
            ConfigSection("admin", [.key(socket)]),
            ConfigSection("metrics", [.key(metricsListen)]),
            ConfigSection("log", [.key(logLevel), .key(logAccess), .key(logAccessQuery)]),
        ]
    }
}
