import BearerdAuth
import BearerdSockets
import BearerdTokens
import Foundation
import Logging
import NIOHTTP1

/// What the admin socket answers, without the socket: each route is a call into the token
/// engine. The daemon serves it (``AdminServer``); the tests call it directly too.
package struct AdminAPI: Sendable {
    /// Where tokens come from.
    package enum Backend: Sendable {
        case engine(TokenManager)
        /// `auth.static_token_file`: a token to show, no session to manage.
        case staticToken(any TokenProvider, path: String)
        /// `per_caller: true`: each caller uid's own tokens; `admits`: whether a local user is one
        /// the session's lists (`socket_allow_uids`, `socket_allow_gids`) name, now.
        case perCaller(CallerSessions, admits: @Sendable (Caller) -> Bool)
        /// A uid of a `per_caller` session that has no tokens here; `hint`: what to run.
        case noTokens(uid: UInt32, hint: String)
    }

    /// Which routes a listener offers: everything on the owner-only admin socket; only
    /// `/metrics`, `/health` and `/ready` on the TCP `metrics.listen` address.
    package enum Exposure: Sendable {
        case admin
        case observability
    }

    /// An answer, JSON unless said otherwise.
    package struct Response: Sendable {
        package var status: HTTPResponseStatus
        package var body: Data
        package var contentType = "application/json"
    }

    /// Request bodies larger than this are refused (413).
    package static let maxBody = 64 * 1024

    /// The session a call is for, chosen from the directory by ``respond(method:path:body:exposure:)``
    /// for that call; `nil` in the API the servers hold, so that a session a reload removed is
    /// not kept (its engine, and its store's lock with it).
    var backend: Backend?
    /// Every session now, by name, in order; one named `default` for a config without
    /// `sessions:`.
    let directory: SessionDirectory
    var sessions: [(name: String, backend: Backend)] { self.directory.all }
    /// Whether the config names its sessions: then each call but `/v1/status` names one.
    let named: Bool
    /// Whether the call named its session (`?session=NAME`).
    var chosen = false
    let logger: Logger
    let metrics: @Sendable () async -> String
    let reload: (@Sendable () async -> ReloadOutcome)?

    /// - Parameters:
    ///   - metrics: the Prometheus text exposition, made at each scrape.
    ///   - reload: re-reads the config and returns once it is live or refused; `nil` where no
    ///     daemon runs (a verb served in process).
    package init(
        backend: Backend,
        logger: Logger,
        metrics: @escaping @Sendable () async -> String = { "" },
        reload: (@Sendable () async -> ReloadOutcome)? = nil
    ) {
        self.init(
            sessions: SessionDirectory([("default", backend)]),
            named: false,
            logger: logger,
            metrics: metrics,
            reload: reload
        )
    }

    /// A daemon of several sessions (`sessions:`); `named`: the config has `sessions:`, and each
    /// call names its session with `?session=NAME` (a call that names none is for the only one).
    package init(
        sessions: SessionDirectory,
        named: Bool,
        logger: Logger,
        metrics: @escaping @Sendable () async -> String = { "" },
        reload: (@Sendable () async -> ReloadOutcome)? = nil
    ) {
        self.backend = nil
        self.directory = sessions
        self.named = named
        self.logger = logger
        self.metrics = metrics
        self.reload = reload
    }

    /// Whether `method path` is the streaming device login (``deviceLogin(send:)``).
    package static func isDeviceLogin(method: HTTPMethod, path: String) -> Bool {
        method == .POST && Self.route(path) == "/v1/login/device"
    }

    /// `asker`: who calls (the admin socket's peer); the daemon's own user and root may call
    /// everything, another local user only their own tokens of a `per_caller` session.
    package func respond(
        method: HTTPMethod,
        path: String,
        body: Data,
        exposure: Exposure = .admin,
        asker: Asker = .trusted
    ) async -> Response {
        switch self.scoped(path) {
        case .success(let api):
            guard exposure == .admin else {
                return await api.route(method: method, path: path, body: body, exposure: exposure)
            }
            return await api.authorized(path: path, asker: asker) { api in
                await api.route(method: method, path: path, body: body, exposure: exposure)
            }
        case .failure(let refusal):
            // A user is not told the session names; "no session runs now" (503) names none.
            return asker.isPrivileged || refusal.response.status == .serviceUnavailable
                ? refusal.response : Self.unnamedSession
        }
    }

    private func route(method: HTTPMethod, path: String, body: Data, exposure: Exposure) async -> Response {
        switch (method, Self.route(path)) {
        case (.GET, "/metrics"):
            return .init(
                status: .ok,
                body: Data(await self.metrics().utf8),
                contentType: "text/plain; version=0.0.4; charset=utf-8"
            )
        case (.GET, "/health") where self.sessions.count > 1 && !self.chosen:
            return .init(status: .ok, body: AdminMessages.encode(await self.healthBySession()))
        case (.GET, "/health"): return .init(status: .ok, body: AdminMessages.encode(await self.health()))
        case (.GET, "/ready") where self.sessions.count > 1 && !self.chosen: return await self.everyReady()
        case (.GET, "/ready"): return await self.ready()
        case (_, "/metrics"), (_, "/health"), (_, "/ready"):
            return Self.failure(.methodNotAllowed, "method_not_allowed", "only GET is allowed on \(Self.route(path))")
        case _ where exposure == .observability:
            return Self.failure(.notFound, "not_found", "this listener serves /metrics, /health and /ready only")
        case (.GET, "/v1/status"): return .init(status: .ok, body: AdminMessages.encode(await self.status()))
        case (.GET, "/v1/sessions"): return .init(status: .ok, body: AdminMessages.encode(await self.sessionList()))
        case (.GET, "/v1/callers"): return await self.callerList()
        case (.GET, "/v1/token"): return await self.token()
        case (.POST, "/v1/login"): return await self.login(body)
        case (.POST, "/v1/login/authorize"): return await self.authorize(body)
        case (.POST, "/v1/logout"): return await self.logout()
        case (.POST, "/v1/reload"): return await self.reloadConfig()
        case (_, "/v1/status"), (_, "/v1/sessions"), (_, "/v1/callers"), (_, "/v1/token"), (_, "/v1/login"),
            (_, "/v1/logout"),
            (_, "/v1/login/device"),
            (_, "/v1/login/authorize"), (_, "/v1/reload"):
            return Self.failure(
                .methodNotAllowed,
                "method_not_allowed",
                "\(method) is not allowed on \(Self.route(path))"
            )
        default:
            return Self.failure(
                .notFound,
                "not_found",
                "no such admin route: use /v1/status, /v1/sessions, /v1/callers, /v1/token, /v1/login, /v1/login/authorize, /v1/login/device, /v1/logout or /v1/reload"
            )
        }
    }

    /// `POST /v1/login/device`: sends the prompt, then the outcome, one JSON line each.
    func deviceLogin(send: @escaping @Sendable (Data) async throws -> Void) async {
        guard case .engine(let manager)? = self.backend else {
            try? await send(Self.line(AdminMessages.DeviceEvent(failure: Self.noSession)))
            return
        }
        do {
            try await manager.logInWithDevice { prompt in
                try? await send(Self.line(AdminMessages.DeviceEvent(prompt: prompt)))
            }
            try? await send(Self.line(AdminMessages.DeviceEvent(status: await manager.status())))
        } catch {
            let failure = AdminMessages.Failure(error: "login_failed", message: error.message)
            try? await send(Self.line(AdminMessages.DeviceEvent(failure: failure)))
        }
    }

    // MARK: Routes

    private func reloadConfig() async -> Response {
        guard let reload = self.reload else {
            return Self.failure(.conflict, "no_daemon", "no daemon runs this config: there is nothing to reload")
        }
        switch await reload() {
        case .applied(let pending):
            return .init(status: .ok, body: AdminMessages.encode(AdminMessages.Reloaded(restartPending: pending)))
        case .refused(let reason):
            return Self.failure(.unprocessableEntity, "config_refused", reason)
        case .notApplied(let reason):
            return Self.failure(.internalServerError, "reload_failed", reason)
        case .partlyApplied(let failed, let pending):
            let waiting = pending.isEmpty ? "" : "; \(pending.joined(separator: ", ")) wait for a restart"
            return Self.failure(
                .internalServerError,
                "reload_partly_applied",
                "\(failed); the rest of the new config is live\(waiting)"
            )
        }
    }

    func status() async -> TokenStatus {
        switch self.backend {
        case nil:
            // No session runs (`/health` asked while there is none).
            var status = TokenStatus(state: .loggedOut, failuresInARow: 0, storeBehind: false, now: Date())
            status.detail = Self.noSessionNow.message
            return status
        case .engine(let manager)?:
            return await manager.status()
        case .staticToken(_, let path)?:
            var status = TokenStatus(state: .static, failuresInARow: 0, storeBehind: false, now: Date())
            status.detail = "the token is read from auth.static_token_file (\(path)): there is no session to manage"
            return status
        case .perCaller(let sessions, _)?:
            var status = TokenStatus(state: .perCaller, failuresInARow: 0, storeBehind: false, now: Date())
            status.detail =
                "each local user has tokens of their own: \(sessions.uids.count) have a store here, \(sessions.loadedCount) are in memory; a user sees theirs with bearerd status\(sessions.session.map { " --session \($0)" } ?? ""), root lists them with --users"
            return status
        case .noTokens(let uid, let hint)?:
            var status = TokenStatus(state: .loggedOut, failuresInARow: 0, storeBehind: false, now: Date())
            status.detail = "no tokens for uid \(uid): \(hint)"
            return status
        }
    }

    private func token() async -> Response {
        do {
            let token: BearerToken
            switch self.backend {
            case .engine(let manager)?: token = try await manager.token()
            case .staticToken(let provider, _)?: token = try await provider.token()
            case nil: return Self.failure(.serviceUnavailable, Self.noSessionNow)
            case .perCaller?: return Self.failure(.conflict, Self.perCallerOnly)
            case .noTokens(let uid, let hint)?:
                return Self.failure(.conflict, "not_logged_in", "no tokens for uid \(uid): \(hint)")
            }
            return .init(status: .ok, body: AdminMessages.encode(AdminMessages.Token(accessToken: token.value)))
        } catch let error as TokenUnavailableError {
            let status: HTTPResponseStatus = error.code == .notLoggedIn ? .conflict : .serviceUnavailable
            return Self.failure(status, error.errorName, error.message)
        } catch {
            return Self.failure(.serviceUnavailable, "token_unavailable", "\(error)")
        }
    }

    private func login(_ body: Data) async -> Response {
        guard case .engine(let manager)? = self.backend else { return Self.failure(.conflict, Self.noSession) }
        guard let login = try? JSONDecoder().decode(AdminMessages.Login.self, from: body) else {
            return Self.failure(
                .badRequest,
                "bad_request",
                "the body must be a JSON login: {\"method\":\"password\",...}"
            )
        }
        do {
            switch login.method {
            case .password:
                guard let username = login.username, let password = login.password, !password.isEmpty else {
                    return Self.failure(.badRequest, "bad_request", "a password login needs username and password")
                }
                try await manager.logIn(username: username, password: Secret(password))
            case .refreshToken:
                guard let token = login.refreshToken, !token.isEmpty else {
                    return Self.failure(.badRequest, "bad_request", "an import needs refresh_token")
                }
                try await manager.logIn(refreshToken: Secret(token))
            case .authorizationCode:
                guard let code = login.code, !code.isEmpty, let state = login.state, !state.isEmpty,
                    code.utf8.count <= 4096, state.utf8.count <= 512, (login.issuer?.utf8.count ?? 0) <= 2048
                else {
                    return Self.failure(.badRequest, "bad_request", "a browser login needs code and state")
                }
                try await manager.logIn(authorizationCode: Secret(code), state: state, issuer: login.issuer)
            }
        } catch {
            self.logger.warning(
                "login failed",
                metadata: ["method": "\(login.method.rawValue)", "reason": "\(error.message)"]
            )
            return Self.failure(.forbidden, "login_failed", error.message)
        }
        self.logger.notice("logged in", metadata: ["method": "\(login.method.rawValue)"])
        return .init(status: .ok, body: AdminMessages.encode(await manager.status()))
    }

    /// `POST /v1/login/authorize`: begins a browser login; the answer is the URL to open.
    private func authorize(_ body: Data) async -> Response {
        guard case .engine(let manager)? = self.backend else { return Self.failure(.conflict, Self.noSession) }
        guard let request = try? JSONDecoder().decode(AdminMessages.Authorize.self, from: body) else {
            return Self.failure(
                .badRequest,
                "bad_request",
                "the body must be {\"redirect_uri\":\"http://127.0.0.1:PORT/callback\"}"
            )
        }
        do {
            let prompt = try await manager.beginAuthorization(redirectURI: request.redirectURI)
            return .init(status: .ok, body: AdminMessages.encode(prompt))
        } catch {
            // A config without a browser login (another way may be used) or an issuer that
            // did not answer (try again).
            if (error.underlying as? TokenEngineError)?.code == .source {
                return Self.failure(.unprocessableEntity, "no_browser_login", error.message)
            }
            return Self.failure(.serviceUnavailable, "login_failed", error.message)
        }
    }

    private func logout() async -> Response {
        if case .noTokens(let uid, _)? = self.backend {
            let result = LogoutResult(
                loggedOut: false,
                revoked: false,
                detail: "uid \(uid) has no tokens here: nothing to log out"
            )
            return .init(status: .ok, body: AdminMessages.encode(result))
        }
        guard case .engine(let manager)? = self.backend else { return Self.failure(.conflict, Self.noSession) }
        return .init(status: .ok, body: AdminMessages.encode(await manager.logOut()))
    }

    /// `/health`: the state, time to expiry, and the last refresh's result.
    func health() async -> AdminMessages.Health {
        let status = await self.status()
        return AdminMessages.Health(
            state: status.state,
            expiresIn: status.expiresIn,
            lastRefreshResult: status.lastRefreshResult,
            failuresInARow: status.failuresInARow,
            detail: status.detail
        )
    }

    /// `/ready`: 200 while a valid token is in hand, 503 otherwise.
    func ready() async -> Response {
        // A per_caller session is ready as it listens: each user's tokens are their own, and
        // theirs to log in for.
        if case .perCaller? = self.backend { return .init(status: .ok, body: Data(#"{"ready":true}"#.utf8)) }
        let token: BearerToken? =
            switch self.backend {
            case .engine(let manager)?: manager.currentToken()
            case .staticToken(let provider, _)?: provider.currentToken()
            case nil, .noTokens?, .perCaller?: nil
            }
        if token != nil { return .init(status: .ok, body: Data(#"{"ready":true}"#.utf8)) }
        let detail = await self.status().detail ?? "no valid token"
        return Self.failure(.serviceUnavailable, "not_ready", detail)
    }

    // MARK: Helpers

    /// No session runs: a reload is replacing the only one, or the one a reload added failed.
    static let noSessionNow = AdminMessages.Failure(
        error: "no_session",
        message:
            "no session runs now: a reload is replacing them (try again in a moment), or the one it started failed (see the log, fix the config's sessions and run bearerd reload)"
    )

    /// What a user other than root and bearerd's own is told of a session they did not name
    /// right: not the names of the daemon's sessions.
    static let unnamedSession = Self.failure(
        .forbidden,
        "forbidden",
        "name the per_caller session you log in to with --session NAME"
    )

    static let perCallerOnly = AdminMessages.Failure(
        error: "per_caller",
        message: "this session keeps a token for each local user: run the command as that user (root: add --uid UID)"
    )

    static let noSession = AdminMessages.Failure(
        error: "no_session",
        message: "the token is read from auth.static_token_file: there is no session to log in to or out of"
    )

    static func route(_ path: String) -> String {
        String(path.prefix { $0 != "?" })
    }

    static func failure(_ status: HTTPResponseStatus, _ failure: AdminMessages.Failure) -> Response {
        .init(status: status, body: AdminMessages.encode(failure))
    }

    static func failure(_ status: HTTPResponseStatus, _ error: String, _ message: String) -> Response {
        Self.failure(status, AdminMessages.Failure(error: error, message: message))
    }

    static func line(_ event: AdminMessages.DeviceEvent) -> Data {
        AdminMessages.encode(event) + Data("\n".utf8)
    }
}
